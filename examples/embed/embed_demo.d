examples/embed/embed_demo: examples/embed/embed_demo.c \
 /usr/include/lua5.4/lua.h /usr/include/lua5.4/luaconf.h \
 /usr/include/lua5.4/lauxlib.h /usr/include/lua5.4/lua.h \
 /usr/include/lua5.4/lualib.h /usr/include/lua5.4/lua-cjson.h
/usr/include/lua5.4/lua.h:
/usr/include/lua5.4/luaconf.h:
/usr/include/lua5.4/lauxlib.h:
/usr/include/lua5.4/lua.h:
/usr/include/lua5.4/lualib.h:
/usr/include/lua5.4/lua-cjson.h:
