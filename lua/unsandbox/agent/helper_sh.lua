--- The sandbox side of the agent tools: one bash script that the client
-- installs once per runtime (/tmp/.unsandbox/h-<hash>.sh, helper.lua) and
-- runs through the Control Plane's shell tool as `bash HELPER OP ARG...`.
-- Everything the protocol has no route for is built here from POSIX tools
-- (GNU coreutils, find, bash 4.4+): file operations with the workspace's
-- path rules checked again, background processes whose stdin, stdout and
-- stderr are files and FIFOs under /tmp/.unsandbox/p/<id>, the cells of
-- code contexts, and the pieces of streamed transfers.
--
-- Contract with helper.lua: the script is sourced by the exec's own bash
-- (`. HELPER OP ARG...`: no second interpreter starts), exits 0 with the
-- result on stdout as base64 (the shell tool hands output back as UTF-8,
-- so bytes travel encoded); a result whose base64 is over 62668
-- characters stays in a spill file and stdout is "@NAME LENGTH" (op spill
-- hands out its base64 text in slices); exit 3 and "CODE<TAB>MESSAGE" on
-- stderr for a refusal (codes: not_found, exists, not_directory,
-- is_directory, not_empty, invalid, closed, exited, mismatch, io). Every
-- process started costs a fork and an exec in a sandbox, so the common
-- paths use bash builtins (the clock, sleeps, path checks). Internal module.
return [==[
set -u -o pipefail
export LC_ALL=C
W=/workspace R=/tmp/.unsandbox H=${BASH_SOURCE[0]}
P=$R/p S=$R/s
cd "$W" 2>/dev/null || { printf 'io\tno workspace at %s\n' "$W" >&2; exit 3; }

F=
fail() { [ -n "$F" ] && rm -f -- "$F"; printf '%s\t%s\n' "$1" "$2" >&2; exit 3; }
NOW=0
now() { local t=${EPOCHREALTIME/./}; NOW=$((10#$t / 1000)); }
# a sleep without a process: a read with a timeout on a FIFO nobody writes
tick() {
  if [ -z "${TICK:-}" ]; then
    [ -p "$R/tick" ] || { mkdir -p "$R"; mkfifo "$R/tick" 2>/dev/null; }
    exec {TICK}<>"$R/tick"
  fi
  read -r -t "$1" -u "$TICK" _ || :
}
size() { stat -c %s -- "$1"; }
# bytes COUNT of FILE from OFFSET, one process
bytes() { dd if="$1" iflag=skip_bytes,count_bytes skip="$2" count="$3" status=none; }

# A workspace path (relative, checked by the client too), refused again
# here: absolute, '..', .sandbox, or a parent resolving out of /workspace
# (realpath runs only when a parent is a symlink).
wpath() {
  local p=$1 first dir real cur=$W rest seg
  case $p in ''|/*) fail invalid "path '$p': must be relative to the workspace";; esac
  case /$p/ in */../*) fail invalid "path '$p': must not contain '..'";; esac
  first=${p#./}; first=${first%%/*}
  [ "$first" = .sandbox ] && fail invalid "path '$p': .sandbox is reserved"
  dir=${p%/*}; [ "$dir" = "$p" ] && return 0
  rest=$dir/
  while [ -n "$rest" ]; do
    seg=${rest%%/*}; rest=${rest#*/}; cur=$cur/$seg
    [ -L "$cur" ] && break
  done
  [ -L "$cur" ] || return 0
  real=$(realpath -m -- "$W/$dir") || fail invalid "path '$p': cannot be resolved"
  case $real/ in
    "$W"/.sandbox/*) fail invalid "path '$p': resolves into .sandbox";;
    "$W"/*) ;;
    *) fail invalid "path '$p': resolves outside the workspace";;
  esac
}
present() { [ -e "$1" ] || [ -L "$1" ]; }
exists() { present "$1" || fail not_found "no such file or directory: $1"; }
is_root() { [ "$1" = . ]; }   # the client sends the root as "."
parent() { PARENT=${1%/*}; [ "$PARENT" = "$1" ] && PARENT=.; [ -n "$PARENT" ] || PARENT=/; }

# ---------------------------------------------------------------- files
op_stat() { wpath "$1"; exists "$1"; stat -c '%f %s %Y' -- "$1" || fail io "cannot stat $1"; }

# list PATH DEPTH: "type size mode mtime path\0" per entry below PATH (DEPTH
# levels, 0 = all), .sandbox left out, at most 100001 entries.
op_list() {
  local p=$1 depth=() prune=()
  wpath "$1"; exists "$1"
  [ -d "$1" ] || fail not_directory "not a directory: $1"
  case $p in .|./*) ;; *) p=./$p;; esac    # never an option to find
  [ "$2" -gt 0 ] && depth=(-maxdepth "$2")
  is_root "$1" && prune=(-path "$p/.sandbox" -prune -o)
  find "$p" -mindepth 1 "${depth[@]}" "${prune[@]}" -printf '%y %s %m %T@ %P\0' 2>/dev/null |
    head -z -n 100001
}

op_remove() {
  wpath "$1"; exists "$1"
  is_root "$1" && fail invalid "the workspace root cannot be removed"
  if [ -d "$1" ] && [ ! -L "$1" ]; then
    if [ "$2" = 1 ]; then rm -rf -- "$1" || fail io "cannot remove $1"
    else
      [ -z "$(find "$1" -mindepth 1 -maxdepth 1 -print -quit)" ] ||
        fail not_empty "directory not empty: $1 (recursive = true removes it)"
      rmdir -- "$1" || fail io "cannot remove $1"
    fi
  else rm -f -- "$1" || fail io "cannot remove $1"; fi
}

op_rename() {
  local msg
  wpath "$1"; wpath "$2"; exists "$1"
  is_root "$1" && fail invalid "the workspace root cannot be renamed"
  parent "$2"; [ -d "$PARENT" ] || fail not_found "no such directory: $PARENT"
  if [ -d "$2" ] && [ ! -L "$2" ] && ! [ -d "$1" ]; then fail is_directory "is a directory: $2"; fi
  msg=$(mv -T -- "$1" "$2" 2>&1) || fail io "$msg"
}

op_mkdir() {
  local msg
  wpath "$1"
  if [ -d "$1" ]; then [ "$2" = 1 ] && return 0; fail exists "already exists: $1"; fi
  present "$1" && fail exists "already exists and is not a directory: $1"
  if [ "$2" = 1 ]; then msg=$(mkdir -p -- "$1" 2>&1) || fail not_directory "$msg"
  else
    parent "$1"
    [ -d "$PARENT" ] || fail not_found "no such directory: $PARENT (parents = true makes it)"
    msg=$(mkdir -- "$1" 2>&1) || fail io "$msg"
  fi
}

op_chmod() {
  local msg
  wpath "$1"; exists "$1"
  [[ $2 =~ ^[0-7]{1,4}$|^[ugoa]*[-+=][rwxXst]*(,[ugoa]*[-+=][rwxXst]*)*$ ]] || fail invalid "bad mode '$2'"
  msg=$(chmod -- "$2" "$1" 2>&1) || fail io "$msg"
}

# ------------------------------------------------------------ transfers
# sha SRC [PIECE LEN]: SRC's sha256 and size; with PIECE, its first LEN
# bytes cut into PIECE too (the first piece of a download: one call
# less), and PIECE's size printed third.
op_sha() {
  local h
  wpath "$1"; exists "$1"; [ -f "$1" ] || fail is_directory "not a regular file: $1"
  h=$(sha256sum < "$1") || fail io "cannot read $1"
  printf '%s %s' "${h%% *}" "$(size "$1")"
  [ -n "${2:-}" ] || return 0
  wpath "$2"
  bytes "$1" 0 "$3" > "$2" || fail io "cannot read $1 at byte 0"
  printf ' %s' "$(size "$2")"
}

# append TARGET PIECE...: the pieces (uploaded by the file routes) added
# to TARGET in order, then removed; prints TARGET's size.
op_append() {
  local t=$1 p; shift
  wpath "$t"; for p; do wpath "$p"; [ -f "$p" ] || fail not_found "no such piece: $p"; done
  cat -- "$@" >> "$t" || fail io "cannot append to $t"
  rm -f -- "$@"; size "$t"
}

# commit TMP DEST SIZE SHA256 [PIECE...]: the pieces appended to TMP as
# append does (the last ones of an upload: one call less), then TMP
# checked and renamed over DEST (made with its parents); on a mismatch
# TMP is removed and DEST left alone.
op_commit() {
  local n h
  if [ $# -gt 4 ]; then op_append "$1" "${@:5}" > /dev/null; fi
  wpath "$1"; wpath "$2"; [ -f "$1" ] || : > "$1"
  n=$(size "$1"); h=$(sha256sum < "$1"); h=${h%% *}
  if [ "$n" != "$3" ] || [ "$h" != "$4" ]; then
    rm -f -- "$1"; fail mismatch "$2: received $n bytes with sha256 $h, sent $3 bytes with sha256 $4"
  fi
  if [ -d "$2" ] && [ ! -L "$2" ]; then rm -f -- "$1"; fail is_directory "is a directory: $2"; fi
  parent "$2"; mkdir -p -- "$PARENT" 2>/dev/null
  mv -f -T -- "$1" "$2" || { rm -f -- "$1"; fail io "cannot rename to $2"; }
}

# slice SRC OFFSET LEN PIECE [OLD]: LEN bytes of SRC from OFFSET into PIECE
# (for the file routes to read), OLD removed first; prints PIECE's size.
op_slice() {
  wpath "$1"; wpath "$4"
  [ -n "${5:-}" ] && { wpath "$5"; rm -f -- "$5"; }
  [ -f "$1" ] || fail not_found "no such file: $1"
  bytes "$1" "$2" "$3" > "$4" || fail io "cannot read $1 at byte $2"
  size "$4"
}

op_ready() { :; }   # nothing: a call that makes sure its needs are installed

op_cleanup() { local p; for p; do wpath "$p"; done; rm -rf -- "$@"; }

op_spill() {   # NAME OFFSET: 46000 characters of a spilled base64 text
  local f=$S/$1
  [ -f "$f" ] || fail not_found "no spilled result $1"
  bytes "$f" "$2" 46000
  [ $(($2 + 46000)) -ge "$(size "$f")" ] && rm -f -- "$f"
  return 0
}

# ------------------------------------------------------------ processes
# $P/ID: cmd, kind (pipe|pty), started, pid (the command's process group),
# out, err, in/ (stdin pieces), ctl (FIFO naming them in order, "eof" to
# close), eof, exit (the status), signal (the last one sent).
proc() { D=$P/$1; [ -d "$D" ] || fail not_found "no such process: $1"; }

op_spawn() {
  local i
  D=$P/$1
  [ -e "$D" ] && fail exists "a process $1 exists already"
  mkdir -p -- "$D/in" || fail io "cannot create $D"
  printf '%s' "$2" > "$D/cmd"; printf '%s' "${3:-pipe}" > "$D/kind"; printf '%(%s)T' -1 > "$D/started"
  [ "${3:-pipe}" = pty ] && return 0
  : > "$D/out"; : > "$D/err"; mkfifo "$D/ctl" "$D/stdin" || fail io "cannot create $D/ctl"
  setsid bash --noprofile --norc "$H" supervise "$1" </dev/null >/dev/null 2>&1 &
  for ((i = 0; i < 2000; i++)); do [ -s "$D/pid" ] && break; tick 0.005; done
  [ -s "$D/pid" ] || fail io "process $1 did not start"
  read -r i < "$D/pid"; printf '%s' "$i"
}

# The supervisor (a session of its own, so the exec that spawned it can
# end): a feeder copies the queued pieces into the stdin FIFO (a message
# "=TEXT" is the line TEXT itself: a cell's request, with no file), the
# command runs in its own session and process group; its status is
# written when it ends (-N when kill() sent the signal N that ended it).
op_supervise() {
  local pid st m
  D=$P/$1
  exec 4<>"$D/ctl"
  while IFS= read -r m <&4; do
    case $m in
      eof) break;;
      =*) printf '%s\n' "${m#=}";;
      ''|*/*) ;;
      *) cat -- "$D/in/$m" 2>/dev/null; rm -f -- "$D/in/$m";;
    esac
  done > "$D/stdin" &
  setsid bash --noprofile --norc -c "$(<"$D/cmd")" <"$D/stdin" >"$D/out" 2>"$D/err" 4<&- &
  pid=$!
  printf '%s\n' "$pid" > "$D/pid"
  wait "$pid"; st=$?
  if [ "$st" -gt 128 ] && [ -s "$D/signal" ] &&
     [ "$(kill -l $((st - 128)) 2>/dev/null)" = "$(cat "$D/signal")" ]; then st=-$((st - 128)); fi
  printf '%s\n' "$st" > "$D/exit.tmp" && mv "$D/exit.tmp" "$D/exit"
  printf 'eof\n' >&4
}

queue() {  # the file $1 becomes the next piece of stdin
  local m
  now; m=w$NOW-$$-$RANDOM
  mv -- "$1" "$D/in/$m" && printf '%s\n' "$m" 1<>"$D/ctl"
}
writable() {
  [ -e "$D/eof" ] && fail closed "stdin of process $1 is closed"
  [ -e "$D/exit" ] && fail exited "process $1 has exited"
  [ -p "$D/ctl" ] || fail invalid "process $1 takes no input here"
}

# write ID B64 | write ID @WPATH (a piece the file routes uploaded)
op_write() {
  proc "$1"; writable "$1"
  case $2 in
    @*) wpath "${2#@}"; queue "${2#@}" || fail io "cannot queue ${2#@}";;
    *) printf '%s' "$2" | base64 -d > "$D/in/.new.$$" || fail invalid "bad base64"
       queue "$D/in/.new.$$";;
  esac
}

op_close_stdin() { proc "$1"; [ -p "$D/ctl" ] || return 0; : > "$D/eof"; printf 'eof\n' 1<>"$D/ctl"; }

# read ID OUTOFF ERROFF WAITMS WATCH: waits (at most WAITMS) until the
# watched output grew (WATCH o, e, oe; - for none) or the process ended,
# then "status outsize errsize nout nerr\n" + nout bytes of stdout from
# OUTOFF + nerr bytes of stderr from ERROFF (47000 at most in all).
op_read() {
  proc "$1"
  local oo=$2 eo=$3 end st=- delay=0.002 z no ne
  now; end=$((NOW + $4))
  while :; do
    [ -f "$D/exit" ] && read -r st < "$D/exit"
    z=($(stat -c %s -- "$D/out" "$D/err" 2>/dev/null || echo 0 0))
    [ "$st" != - ] && break
    case $5 in *o*) [ "${z[0]}" -gt "$oo" ] && break;; esac
    case $5 in *e*) [ "${z[1]}" -gt "$eo" ] && break;; esac
    now; [ "$NOW" -ge "$end" ] && break
    tick "$delay"
    case $delay in 0.002) delay=0.005;; 0.005) delay=0.01;; 0.01) delay=0.02;; *) delay=0.05;; esac
  done
  no=0 ne=0
  case $5 in *e*) ne=$(( z[1] - eo )); [ "$ne" -gt 23500 ] && ne=23500; [ "$ne" -lt 0 ] && ne=0;; esac
  case $5 in *o*)
    no=$(( z[0] - oo )); [ "$no" -gt $((47000 - ne)) ] && no=$((47000 - ne)); [ "$no" -lt 0 ] && no=0;;
  esac
  printf '%s %s %s %s %s\n' "$st" "${z[0]}" "${z[1]}" "$no" "$ne"
  [ "$no" -gt 0 ] && bytes "$D/out" "$oo" "$no"
  [ "$ne" -gt 0 ] && bytes "$D/err" "$eo" "$ne"
  return 0
}

info() {  # one record: id pid status started kind cmd, each ending in NUL
  local d=$P/$1 pid=- st=running
  [ -s "$d/pid" ] && read -r pid < "$d/pid"
  [ -f "$d/exit" ] && read -r st < "$d/exit"
  [ "$(cat "$d/kind" 2>/dev/null)" = pty ] && st=pty
  printf '%s\0%s\0%s\0%s\0%s\0%s\0' "$1" "$pid" "$st" "$(cat "$d/started" 2>/dev/null)" \
    "$(cat "$d/kind" 2>/dev/null)" "$(cat "$d/cmd" 2>/dev/null)"
}
op_info() { proc "$1"; info "$1"; }
op_ps() { local d; [ -d "$P" ] || return 0; for d in "$P"/*/; do [ -d "$d" ] && info "$(basename "$d")"; done; }

# kill ID SIGNAL [group|pid|children]
op_kill() {
  local pid
  proc "$1"
  [ -s "$D/pid" ] || fail invalid "process $1 has no pid here"
  [ -f "$D/exit" ] && fail exited "process $1 has exited"
  read -r pid < "$D/pid"
  printf '%s\n' "$2" > "$D/signal"
  case ${3:-group} in
    group) kill -s "$2" -- "-$pid" 2>/dev/null || kill -s "$2" -- "$pid" 2>/dev/null;;
    pid) kill -s "$2" -- "$pid" 2>/dev/null;;
    children) kill -s "$2" -- $(kids "$pid") 2>/dev/null;;
  esac
  return 0
}

kids() {   # the children of pid $1, from /proc (no pkill in every image)
  local f l r
  for f in /proc/[0-9]*/stat; do
    { read -r l < "$f"; } 2>/dev/null || continue
    r=${l##*) }; r=${r#* }
    [ "${r%% *}" = "$1" ] && { f=${f#/proc/}; printf '%s\n' "${f%/stat}"; }
  done
}

# The state moves out of the way before it is removed: the kill ends the
# supervisor's wait, and its status written under $D meanwhile would make
# rm's last rmdir fail and leave a husk the id still finds; renamed, $D is
# a path the supervisor can no longer write to.
op_forget() {
  local pid g
  [ -d "$P/$1" ] || return 0
  D=$P/$1 g=$P/.forgotten.$1.$$
  if [ -s "$D/pid" ] && [ ! -f "$D/exit" ]; then read -r pid < "$D/pid"; kill -s KILL -- "-$pid" 2>/dev/null; fi
  [ -p "$D/ctl" ] && printf 'eof\n' 1<>"$D/ctl"
  mv -- "$D" "$g" 2>/dev/null || g=$D
  rm -rf -- "$g"
}

# ------------------------------------------------------------ code cells
# cell ID N TIMEOUTMS WAITMS CODE: CODE (base64, or @WPATH: uploaded; - :
# sent before) becomes $D/cells/N.code and "N TIMEOUTMS" a line of the
# driver's stdin; then waits (at most WAITMS) for N.res. Prints "done
# RESULT\n" + the cell's stdout and stderr (RESULT: the driver's one-line
# JSON, with their sizes nout and nerr), or "pending" or "exited STATUS".
# The driver removes a cell's files when the next cell starts.
op_cell() {
  local c n=$2 end st=- delay=0.002 z
  proc "$1"; c=$D/cells
  if [ "$5" != - ]; then
    writable "$1"; mkdir -p "$c"
    case $5 in
      @*) wpath "${5#@}"; mv -- "${5#@}" "$c/$n.code" || fail io "cannot move ${5#@}";;
      *) printf '%s' "$5" | base64 -d > "$c/.$n.code" || fail invalid "bad base64"
         mv "$c/.$n.code" "$c/$n.code";;
    esac
    printf '=%s %s\n' "$n" "$3" 1<>"$D/ctl"
  fi
  now; end=$((NOW + $4))
  while [ ! -f "$c/$n.res" ]; do
    [ -f "$D/exit" ] && { read -r st < "$D/exit"; break; }
    now; [ "$NOW" -ge "$end" ] && { printf 'pending\n'; return 0; }
    tick "$delay"
    case $delay in 0.002) delay=0.005;; 0.005) delay=0.01;; *) delay=0.02;; esac
  done
  [ "$st" != - ] && { printf 'exited %s\n' "$st"; return 0; }
  IFS= read -r z < "$c/$n.res" || [ -n "$z" ] || fail io "cell $n of $1 left no result"
  printf 'done %s\n' "$z"
  cat -- "$c/$n.out" "$c/$n.err" 2>/dev/null
  return 0
}

# ---------------------------------------------------------------- main
op=${1:-}; shift || true
case $op in
  stat|list|remove|rename|mkdir|chmod|sha|append|commit|slice|cleanup|spill|ready|spawn|write|\
  close_stdin|read|info|ps|kill|forget|cell) ;;
  supervise) op_supervise "$@"; exit 0;;
  '') fail invalid "no operation";;
  *) fail invalid "unknown operation '$op'";;
esac
[ -d "$S" ] || mkdir -p "$S" || fail io "cannot create $S"
N=r.$$.$RANDOM F=$S/$N
"op_$op" "$@" > "$F"   # ops report failures through fail only
B=$(base64 -w0 < "$F")
if [ ${#B} -le 62668 ]; then rm -f -- "$F"; printf '%s' "$B"; exit 0; fi
printf '%s' "$B" > "$F" || fail io "cannot write $F"
printf '@%s %s' "$N" "${#B}"
exit 0
]==]
