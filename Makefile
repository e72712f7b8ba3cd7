# unsandbox for Lua: build, test, demo, bench.
# One non-recursive Makefile; sources are found by wildcard so adding a
# file to a directory needs no edit here.

CC       ?= cc
CFLAGS   ?= -O2 -g
# required flags stay even when a user sets CFLAGS on the command line
override CFLAGS   += -std=c11 -D_GNU_SOURCE -Wall -Wextra -Wno-unused-parameter -fPIC -MMD -MP
# LPeg's warning set: shadowed names, functions without a prototype, and
# string literals written through a non-const pointer (exec argument
# vectors are const arrays, cast once at the exec call as POSIX intends)
override CFLAGS   += -Wshadow -Wmissing-prototypes -Wstrict-prototypes -Wwrite-strings

# ---- which Lua, and where headers and libraries are -------------------
# `make LUA=luajit|5.1|5.3|5.4` builds the module for that Lua (5.4 by
# default): build/<lua>/unsandbox/core.so (5.4: lua/unsandbox/core.so),
# its binding objects in build/<lua>/lua/ (5.4: build/lua/), so the four
# builds live side by side; the Lua-free core is shared. unlua, the C
# tests and the examples of C hosts are 5.4 only. A LUA set in the
# environment is not ours (LuaRocks' LUA is an interpreter's path):
# without LUA on the command line, LUA_INCDIR's headers say which Lua it
# is (LuaRocks passes LUA_INCDIR), else 5.4.
ifneq ($(origin LUA),command line)
  ifneq ($(LUA_INCDIR),)
    LUA := $(if $(wildcard $(LUA_INCDIR)/luajit.h),luajit,$(shell sed -n \
      's/^\#define[[:space:]]*LUA_VERSION_NUM[[:space:]]*50\([1-4]\).*/5.\1/p' $(LUA_INCDIR)/lua.h))
  else
    LUA := 5.4
  endif
endif
ifeq ($(filter luajit 5.1 5.3 5.4,$(LUA)),)
  $(error LUA=$(LUA): the module builds for luajit, 5.1, 5.3 or 5.4)
endif
# its pkg-config name and interpreter, and the version its modules install under
LUA_PC      = $(if $(filter luajit,$(LUA)),luajit,lua$(LUA))
LUA_INTERP  = $(LUA_PC)
LUA_ABI     = $(if $(filter luajit,$(LUA)),5.1,$(LUA))
# Headers: these variables (LuaRocks passes them from the rockspec), else
# pkg-config for Lua, else the compiler's own search path. lua-compat53
# (Debian's lua-compat53-dev) gives 5.1 and LuaJIT the 5.3 C API.
LUA_INCDIR      ?= $(patsubst -I%,%,$(firstword $(shell pkg-config --cflags-only-I $(LUA_PC) 2>/dev/null)))
COMPAT53_INCDIR ?= /usr/include/lua5.1
CURL_INCDIR     ?=
OPENSSL_INCDIR  ?=
CJSON_LIBDIR    ?=
LUA_LIBDIR      ?=
incdir = $(if $(1),-isystem $(1))
libdir = $(if $(1),-L$(1))
override CPPFLAGS += -Icsrc $(call incdir,$(LUA_INCDIR)) $(call incdir,$(CURL_INCDIR)) \
                     $(call incdir,$(OPENSSL_INCDIR))
ifneq ($(filter luajit 5.1,$(LUA)),)
  override CPPFLAGS += $(call incdir,$(COMPAT53_INCDIR))
endif
# what 5.4 hosts of our own (unlua, embed_demo, the C tests) link
LUA_LIBS  = $(call libdir,$(LUA_LIBDIR)) -llua5.4
CJSON_LIB = $(call libdir,$(CJSON_LIBDIR)) -llua5.4-cjson
NET_LIBS  = -lcurl -lcrypto
# unsandboxd's own: archives are the agent's (AGENT_LIBS), HTTP is served,
# never fetched (spec/link_unit_spec.lua checks each binary uses what it links)
SRV_LIBS  = -lmicrohttpd -ljansson -lsqlite3 -lcrypto -lpthread

# `make V=1` shows the full compiler command lines
V ?= 0
ifeq ($(V),0)
  Q = @
  say = @printf '  %-6s %s\n' $(1) $(2)
else
  Q =
  say = @:
endif

CORE_SRC   := $(wildcard csrc/core/*.c csrc/core/*/*.c)
BIND_SRC   := $(wildcard csrc/lua/*.c)
LAZY_SRC   := $(wildcard csrc/lazy/*.c)
HOST_SRC   := $(wildcard csrc/host/*.c)
SERVER_SRC := $(wildcard csrc/server/*.c csrc/server/*/*.c csrc/server/*/*/*.c)
AGENT_SRC  := $(wildcard csrc/agent/*.c)
TEST_SRC   := $(wildcard csrc/tests/*_test.c)

CORE_OBJ   := $(CORE_SRC:csrc/%.c=build/%.o)
# the binding of this LUA (5.4's where it always was)
BIND_DIR   := $(if $(filter 5.4,$(LUA)),build/lua,build/$(LUA)/lua)
BIND_OBJ   := $(BIND_SRC:csrc/lua/%.c=$(BIND_DIR)/%.o)
LAZY_OBJ   := $(LAZY_SRC:csrc/%.c=build/%.o)
HOST_OBJ   := $(HOST_SRC:csrc/%.c=build/%.o)
SERVER_OBJ := $(SERVER_SRC:csrc/%.c=build/%.o)
# everything of the server but its main(), for the C unit tests
SERVER_LIB := $(filter-out build/server/main.o,$(SERVER_OBJ))
AGENT_OBJ  := $(AGENT_SRC:csrc/%.c=build/%.o)
# everything of the agent but its main(), for the C unit tests
AGENT_LIB  := $(filter-out build/agent/main.o,$(AGENT_OBJ))
TEST_BIN   := $(TEST_SRC:csrc/tests/%.c=build/tests/%)

MODULE    = $(if $(filter 5.4,$(LUA)),lua,build/$(LUA))/unsandbox/core.so
# the module of every Lua (make all-luas); `make test` uses LuaJIT's too
LUA_TARGETS = luajit 5.1 5.3 5.4
# the facade: lua/unsandbox/ and its folders by concern (exec/, cp/, cli/);
# cli/ is the `un` tool that unlua runs: 5.4 only, and installed only there
FACADE_LUA := $(sort $(wildcard lua/unsandbox/*.lua lua/unsandbox/*/*.lua))
ifneq ($(LUA),5.4)
  FACADE_LUA := $(filter-out lua/unsandbox/cli/%,$(FACADE_LUA))
endif
# the same relative to lua/unsandbox/, and the folders, for install
FACADE_REL := $(FACADE_LUA:lua/unsandbox/%=%)
FACADE_DIRS := $(sort $(filter-out ./,$(dir $(FACADE_REL))))
# the facade precompiled, as `make install` installs it (below)
LUA_BC    := $(FACADE_LUA:lua/%=build/luac/%)
UNLUA     = bin/unlua
UNSANDBOXD = bin/unsandboxd
AGENT     = bin/unsandboxd-agent
EMBED     = examples/embed/embed_demo
FRAME     = examples/embed/frame_loop

.PHONY: all deps languages test check-c demo bench rock-check clean fuzz sanitize coverage install rock install-rock doc
.PHONY: module all-luas test-all-luas
ifeq ($(LUA),5.4)
all: $(MODULE) $(UNLUA) $(UNSANDBOXD) $(AGENT) $(EMBED) $(FRAME) $(TEST_BIN) $(LUA_BC)
else
# another Lua: its module (the programs and C tests are 5.4's)
all: $(MODULE)
endif
module: $(MODULE)

# the module for every Lua of LUA_TARGETS, side by side
all-luas:
	@for l in $(LUA_TARGETS); do $(MAKE) -s --no-print-directory LUA=$$l module || exit 1; done

build/%.o: csrc/%.c
	@mkdir -p $(dir $@)
	$(call say,CC,$<)
	$(Q)$(CC) $(CPPFLAGS) $(CFLAGS) -c $< -o $@

$(BIND_DIR)/%.o: csrc/lua/%.c
	@mkdir -p $(dir $@)
	$(call say,CC,$<)
	$(Q)$(CC) $(CPPFLAGS) $(CFLAGS) -c $< -o $@

# libcurl and libcrypto are loaded on first use (csrc/lazy/lazy.h): a
# module that still needs one of their symbols from the loader is refused
$(MODULE): $(CORE_OBJ) $(BIND_OBJ) $(LAZY_OBJ)
	@mkdir -p $(dir $@)
	$(call say,LD,$@)
	$(Q)$(CC) $(LDFLAGS) -shared -o $@ $^ -ldl
	$(Q)if nm -D --undefined-only $@ | grep -E ' (curl_|EVP_|OSSL_|OPENSSL_|CRYPTO_|RAND_)'; then \
	  echo "$@: the functions above need a line in csrc/lazy/" >&2; rm -f $@; exit 1; fi

# unlua links Lua, lua-cjson, readline (the REPL's line editing, as the
# stock lua does), the core and binding (opened when required, through
# package.preload; libcurl and libcrypto still load on first use) and the
# Lua facade as data (build/host/facade_lua.c), so a copy of it anywhere
# still has `require "unsandbox"`. -Wl,-E exports the Lua API to the C
# modules scripts load.
build/host/facade_lua.c: $(FACADE_LUA) scripts/embed_lua.lua
	@mkdir -p build/host
	$(call say,GEN,$@)
	$(Q)lua5.4 scripts/embed_lua.lua $@ $(FACADE_LUA)

# What `make install` puts in LUADIR: the facade precompiled by luac5.4
# (debug information kept, so errors and tracebacks still name the source
# lines), which `require "unsandbox"` loads several times faster than it
# compiles the sources (`make bench` prints both). A compile
# error fails the build here. `make install PRECOMPILE=0` installs the
# sources instead.
build/luac/unsandbox/%.lua: lua/unsandbox/%.lua
	@mkdir -p $(dir $@)
	$(call say,LUAC,$<)
	$(Q)luac5.4 -o $@ $<

build/host/facade_lua.o: build/host/facade_lua.c
	$(call say,CC,$<)
	$(Q)$(CC) $(CPPFLAGS) $(CFLAGS) -c $< -o $@

$(UNLUA): $(HOST_OBJ) build/host/facade_lua.o $(CORE_OBJ) $(BIND_OBJ) $(LAZY_OBJ)
	@mkdir -p bin
	$(call say,LD,$@)
	$(Q)$(CC) $(LDFLAGS) -Wl,-E -o $@ $^ $(LUA_LIBS) $(CJSON_LIB) -lreadline -lm -ldl

# the server shares signing, base64, the id rule, trace context, the
# pseudonym, the MCP rules (session ids, tool names), the shapes of the
# Control Plane's ids and WebSocket's framing and handshake with the
# client core
SERVER_CORE := build/core/sign.o build/core/base64.o build/core/ids.o build/core/trace.o \
               build/core/clock.o build/core/interrupt.o build/core/validate.o build/core/file.o \
               build/core/digest.o build/core/error.o build/core/pseudonym.o build/core/utf8.o \
               build/core/mcp.o build/core/cpshapes.o build/core/ws/frames.o build/core/ws/handshake.o

$(UNSANDBOXD): $(SERVER_OBJ) $(SERVER_CORE)
	@mkdir -p bin
	$(call say,LD,$@)
	$(Q)$(CC) $(LDFLAGS) -o $@ $^ $(SRV_LIBS)

# the agent runs inside sandboxes: jansson, libarchive and libcrypto only
# (all under /usr, which every sandbox mounts read-only), and base64 from the core
AGENT_CORE := build/core/base64.o
AGENT_LIBS  = -ljansson -larchive -lcrypto

$(AGENT): $(AGENT_OBJ) $(AGENT_CORE)
	@mkdir -p bin
	$(call say,LD,$@)
	$(Q)$(CC) $(LDFLAGS) -o $@ $^ $(AGENT_LIBS)

$(EMBED): examples/embed/embed_demo.c $(CORE_OBJ) $(BIND_OBJ)
	$(call say,LD,$@)
	$(Q)$(CC) $(CPPFLAGS) $(CFLAGS) $(LDFLAGS) -o $@ $(filter %.c %.o,$^) $(LUA_LIBS) $(CJSON_LIB) $(NET_LIBS) -lm -ldl

# the frame-loop host (examples/embed): linked like embed_demo
$(FRAME): examples/embed/frame_loop.c $(CORE_OBJ) $(BIND_OBJ)
	$(call say,LD,$@)
	$(Q)$(CC) $(CPPFLAGS) $(CFLAGS) $(LDFLAGS) -o $@ $(filter %.c %.o,$^) $(LUA_LIBS) $(CJSON_LIB) $(NET_LIBS) -lm -ldl

# the C tests build their fixtures' argument vectors from literals
build/tests/%: override CFLAGS += -Wno-write-strings

build/tests/core_%: csrc/tests/core_%.c $(CORE_OBJ) csrc/tests/tap.h
	@mkdir -p build/tests
	$(call say,LD,$@)
	$(Q)$(CC) $(CPPFLAGS) $(CFLAGS) $(LDFLAGS) -o $@ $< $(CORE_OBJ) $(NET_LIBS)

# the binding under a Lua state of the test's own (lua_*_test.c)
build/tests/lua_%: csrc/tests/lua_%.c $(BIND_OBJ) $(CORE_OBJ) csrc/tests/tap.h
	@mkdir -p build/tests
	$(call say,LD,$@)
	$(Q)$(CC) $(CPPFLAGS) $(CFLAGS) $(LDFLAGS) -o $@ $< $(BIND_OBJ) $(CORE_OBJ) $(LUA_LIBS) $(NET_LIBS) -lm -ldl -lpthread

# linked as unsandbox/core.so is: libcurl and libcrypto through csrc/lazy
build/tests/lazy_%: csrc/tests/lazy_%.c $(CORE_OBJ) $(LAZY_OBJ) csrc/tests/tap.h
	@mkdir -p build/tests
	$(call say,LD,$@)
	$(Q)$(CC) $(CPPFLAGS) $(CFLAGS) $(LDFLAGS) -o $@ $< $(CORE_OBJ) $(LAZY_OBJ) -ldl -lpthread

build/tests/server_%: csrc/tests/server_%.c $(SERVER_LIB) $(SERVER_CORE) csrc/tests/tap.h
	@mkdir -p build/tests
	$(call say,LD,$@)
	$(Q)$(CC) $(CPPFLAGS) $(CFLAGS) $(LDFLAGS) -o $@ $< $(SERVER_LIB) $(SERVER_CORE) $(SRV_LIBS)

build/tests/agent_%: csrc/tests/agent_%.c csrc/tests/agent_util.h $(AGENT_LIB) $(AGENT_CORE) $(AGENT) csrc/tests/tap.h
	@mkdir -p build/tests
	$(call say,LD,$@)
	$(Q)$(CC) $(CPPFLAGS) $(CFLAGS) $(LDFLAGS) -o $@ $< $(AGENT_LIB) $(AGENT_CORE) $(AGENT_LIBS)

# the Debian packages of each target (scripts/deps.sh's groups)
DEPS = @scripts/deps.sh
deps:
	$(DEPS) build run test doc fuzz coverage

# Optional: the languages Debian packages (scripts/deps.sh's languages
# group), for a local backend whose GET /languages is close to the
# service's; each runs once its program is installed (a restart of
# unsandboxd probes again).
languages:
	$(DEPS) languages

# The README's test command: installs what is missing, builds (the module
# for every Lua too), runs the C unit tests and every busted spec under
# Lua 5.4 and again under LuaJIT (each file's results must be the same
# under both), ends with "N passed, N failed". test-all-luas runs the
# specs under 5.1 and 5.3 as well.
test:
	$(DEPS) build run test
	@$(MAKE) -s --no-print-directory all all-luas
	@UNSB_LUAS="luajit" scripts/run-tests.sh

test-all-luas:
	$(DEPS) build run test
	@$(MAKE) -s --no-print-directory all all-luas
	@UNSB_LUAS="luajit 5.1 5.3" scripts/run-tests.sh

check-c: all
	@for t in $(TEST_BIN); do $$t; done

# Hardening (each ends with "N passed, N failed"): libFuzzer harnesses of
# fuzz/ for FUZZ_TIME seconds each (clang); the C tests and every spec with
# the sanitizers, and C line coverage of both, each in its own copy of the
# tree under build/ (scripts/variant.sh), so the ordinary build is untouched.
FUZZ_TIME ?= 20
fuzz:
	$(DEPS) build fuzz
	@FUZZ_TIME=$(FUZZ_TIME) scripts/fuzz.sh

sanitize:
	$(DEPS) build run test
	@scripts/sanitize.sh

coverage:
	$(DEPS) build run test coverage
	@scripts/coverage.sh

# The README's first command: the quickstart on a private local backend.
demo:
	$(DEPS) build run
	@$(MAKE) -s --no-print-directory all
	$(UNLUA) --local examples/quickstart.lua

# the baselines the bench measures from C (bench/tool.c)
BENCH_TOOL = build/bench/tool
$(BENCH_TOOL): bench/tool.c
	@mkdir -p build/bench
	$(call say,LD,$@)
	$(Q)$(CC) $(CPPFLAGS) $(CFLAGS) $(LDFLAGS) -o $@ $< -lcurl -lcrypto

bench:
	$(DEPS) build run test
	@$(MAKE) -s --no-print-directory all all-luas $(BENCH_TOOL)
	@bench/run.sh

# The reference of the public module (LDoc, docs/config.ld) in build/doc/;
# the man pages are docs/man/*.1, written by hand and installed as they are.
# LDoc's warnings go to stderr and stay in sight; its stdout is chatter
# (the config it read, a line per file merged into a class), shown only
# when it fails.
doc:
	$(DEPS) doc
	@rm -rf build/doc && mkdir -p build
	@cd docs && ldoc -q . >../build/ldoc.out || { cat ../build/ldoc.out; exit 1; }
	@echo "reference: build/doc/index.html; man pages: docs/man/"

# Proves the rockspec: builds and installs into a temporary tree, then
# stock lua5.4 requires the module from that tree.
rock-check:
	$(DEPS) build test
	@scripts/rock-check.sh

# `make install PREFIX=/usr/local DESTDIR=/tmp/stage`: the module (Lua
# files and core.so where stock lua5.4 and unlua look), the programs, the
# man pages, and for C hosts libunsandbox.a, unsandbox.h and unsandbox.pc.
# LuaRocks sets BINDIR, LUADIR and LIBDIR to its tree's (the rockspec).
PREFIX     ?= /usr/local
BINDIR     ?= $(PREFIX)/bin
LUADIR     ?= $(PREFIX)/share/lua/$(LUA_ABI)
LIBDIR     ?= $(PREFIX)/lib/lua/$(LUA_ABI)
CLIBDIR    ?= $(PREFIX)/lib
INCLUDEDIR ?= $(PREFIX)/include
MANDIR     ?= $(PREFIX)/share/man
VERSION    := $(shell sed -n 's/^\#define UNSB_VERSION "\(.*\)"/\1/p' csrc/core/version.h)
STATIC_LIB  = build/libunsandbox.a
PC_FILE     = build/unsandbox.pc

$(STATIC_LIB): $(CORE_OBJ) $(BIND_OBJ) $(LAZY_OBJ)
	$(call say,AR,$@)
	$(Q)rm -f $@ && $(AR) rcs $@ $^

# made at every install: it records this install's PREFIX. The library is
# static, so what its objects call (libdl, libm) is in Libs: the README's
# `cc host.c $(pkg-config --cflags --libs unsandbox)` links as printed
$(PC_FILE): FORCE
	@mkdir -p build
	$(Q)printf '%s\n' 'prefix=$(PREFIX)' 'libdir=$(CLIBDIR)' 'includedir=$(INCLUDEDIR)' \
	  'luadir=$(LUADIR)' '' 'Name: unsandbox' \
	  'Description: unsandbox for Lua: the C core and binding, to embed in a Lua 5.4 host' \
	  'Version: $(VERSION)' 'Requires: lua5.4 lua5.4-cjson' \
	  'Libs: -L$${libdir} -lunsandbox -ldl -lm' 'Cflags: -I$${includedir}' > $@

# what the rockspec builds and installs (its tree gets the module, unlua
# and un; `un --local` then finds unsandboxd on $PATH). For another Lua
# than 5.4: the module and the facade's sources (unlua and un are a 5.4
# host and its tool, and luac5.4's bytecode is 5.4's).
ifeq ($(LUA),5.4)
rock: $(MODULE) $(UNLUA) $(LUA_BC)
ROCK_BINS = $(UNLUA) bin/un
else
rock: $(MODULE)
ROCK_BINS =
PRECOMPILE = 0
endif

# the facade's files keep their folders (unsandbox/exec/jobs.lua is the
# module unsandbox.exec.jobs)
FACADE_FROM = $(if $(filter 0,$(PRECOMPILE)),lua/unsandbox,build/luac/unsandbox)
install-rock: rock
	install -d $(DESTDIR)$(BINDIR) $(DESTDIR)$(LUADIR)/unsandbox $(DESTDIR)$(LIBDIR)/unsandbox \
	  $(addprefix $(DESTDIR)$(LUADIR)/unsandbox/,$(FACADE_DIRS))
	$(if $(ROCK_BINS),install -m 0755 $(ROCK_BINS) $(DESTDIR)$(BINDIR)/)
	@for f in $(FACADE_REL); do \
	  echo "install -m 0644 $(FACADE_FROM)/$$f $(DESTDIR)$(LUADIR)/unsandbox/$$f"; \
	  install -m 0644 $(FACADE_FROM)/$$f $(DESTDIR)$(LUADIR)/unsandbox/$$f || exit 1; \
	done
	install -m 0755 $(MODULE) $(DESTDIR)$(LIBDIR)/unsandbox/

# (the library for C hosts is 5.4's, as its unsandbox.pc says: another
# LUA installs the module, the facade and the servers)
install: install-rock $(UNSANDBOXD) $(AGENT) $(if $(filter 5.4,$(LUA)),$(STATIC_LIB) $(PC_FILE))
	install -d $(DESTDIR)$(MANDIR)/man1
	install -m 0755 $(UNSANDBOXD) $(AGENT) $(DESTDIR)$(BINDIR)/
ifeq ($(LUA),5.4)
	install -d $(DESTDIR)$(CLIBDIR)/pkgconfig $(DESTDIR)$(INCLUDEDIR)
	install -m 0644 $(STATIC_LIB) $(DESTDIR)$(CLIBDIR)/
	install -m 0644 $(PC_FILE) $(DESTDIR)$(CLIBDIR)/pkgconfig/
	install -m 0644 csrc/include/unsandbox.h $(DESTDIR)$(INCLUDEDIR)/
endif
	$(if $(wildcard docs/man/*.1),install -m 0644 $(wildcard docs/man/*.1) $(DESTDIR)$(MANDIR)/man1/)

FORCE:
.PHONY: FORCE

# the dependency files of this tree's own objects and programs only: not
# those of the variant trees (build/<name>/src, scripts/variant.sh) nor of
# the bench's baseline trees (build/bench/*/), whose rules name the same
# relative paths, nor those a moved source left behind (their headers are
# gone: each would make every build relink)
-include $(wildcard $(patsubst %.o,%.d,$(CORE_OBJ) $(BIND_OBJ) $(LAZY_OBJ) $(HOST_OBJ) $(SERVER_OBJ) \
                                        $(AGENT_OBJ)) $(TEST_BIN:=.d) build/bench/tool.d)

clean:
	rm -rf build $(MODULE) $(UNLUA) $(UNSANDBOXD) $(AGENT) $(EMBED) $(FRAME)
