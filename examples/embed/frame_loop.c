/*
** frame_loop: a game engine's 60 Hz main loop that runs sandboxed jobs
** without ever waiting for them. The host owns the loop; the
** library owns nothing but its tasks. Each frame the host calls
** unsandbox.step(0), which resumes whatever can go on and returns at once,
** then does its own frame work and sleeps to the next frame. The Lua part
** starts N jobs as tasks (default 32) and checks their outputs at the end.
**
** Before the first frame it calls unsandbox.warm_up{connections = 16}:
** the default client is made, libcurl and libcrypto mapped, the
** credentials read and the connections of the client's 16 slots opened,
** so that no frame pays for any of that. It reports the first step(0)
** (which starts the tasks) apart from the longest one after it, the CPU
** time of the step that used the most (a step that took long on the wall
** clock but not in CPU was preempted by the machine or waited: its
** context switches say which), the longest frame, and how many frames it took; the spec
** (spec/concurrency_examples_spec.lua) and `make bench` read those lines.
** Set-up as in embed_demo.c.
**
** Usage: frame_loop [lua-dir [jobs]]   (run from the repository root)
*/
#ifndef _GNU_SOURCE
#define _GNU_SOURCE                /* RUSAGE_THREAD */
#endif
#include <stdio.h>
#include <stdlib.h>
#include <sys/resource.h>
#include <time.h>

#include "lua.h"
#include "lauxlib.h"
#include "lualib.h"
#include "lua-cjson.h"

#ifndef UNSANDBOX_LUA_DIR
#define UNSANDBOX_LUA_DIR "lua"
#endif

#define FRAME_NS (1000000000L / 60)
#define MAX_FRAMES (60L * 300)     /* five minutes of frames at most */

extern int luaopen_unsandbox_core(lua_State *L);

/* start(jobs) spawns the tasks; check() verifies every output and returns
** how many were right. Both run in the host's state like a game script. */
static const char script[] =
  "local unsandbox = require 'unsandbox'\n"
  "local tasks = {}\n"
  "local M = {}\n"
  "function M.warm()\n"
  "  assert(unsandbox.warm_up { connections = 16 })\n"
  "end\n"
  "function M.start(n)\n"
  "  for i = 1, n do\n"
  "    tasks[i] = unsandbox.spawn(function()\n"
  "      return unsandbox.execute_code('bash', 'sleep 1; echo job-' .. i)\n"
  "    end)\n"
  "  end\n"
  "end\n"
  "function M.check()\n"
  "  local ok = 0\n"
  "  for i, t in ipairs(tasks) do\n"
  "    local r, err = t:result()\n"
  "    if r and r.stdout == 'job-' .. i .. '\\n' then ok = ok + 1\n"
  "    else io.stderr:write('job ', i, ': ', tostring(r and r.stdout or err), '\\n') end\n"
  "  end\n"
  "  return ok\n"
  "end\n"
  "return M\n";

static int traceback(lua_State *L) {
  const char *msg = lua_tostring(L, 1);
  luaL_traceback(L, L, msg ? msg : luaL_tolstring(L, 1, NULL), 1);
  return 1;
}

static void open_unsandbox(lua_State *L, const char *dir) {
  luaL_getsubtable(L, LUA_REGISTRYINDEX, LUA_PRELOAD_TABLE);
  lua_pushcfunction(L, luaopen_unsandbox_core);
  lua_setfield(L, -2, "unsandbox.core");
  lua_pop(L, 1);
  luaL_requiref(L, "cjson", luaopen_cjson, 0);
  lua_pop(L, 1);
  lua_getglobal(L, "package");
  lua_getfield(L, -1, "path");
  lua_pushfstring(L, "%s/?.lua;%s/?/init.lua;%s", dir, dir, lua_tostring(L, -1));
  lua_setfield(L, -3, "path");
  lua_pop(L, 2);
}

static long long clock_ns(clockid_t id) {
  struct timespec ts;
  clock_gettime(id, &ts);
  return (long long)ts.tv_sec * 1000000000LL + ts.tv_nsec;
}

static long long now_ns(void) { return clock_ns(CLOCK_MONOTONIC); }

/* This thread's context switches so far: voluntary (it waited) and
** involuntary (the machine gave its CPU to another). */
static void switches(long *waited, long *preempted) {
  struct rusage u;
  getrusage(RUSAGE_THREAD, &u);
  *waited = u.ru_nvcsw;
  *preempted = u.ru_nivcsw;
}

/* What one step(0) took: the first, then the longest after it by the
** wall clock (with its context switches) and by this thread's CPU time. */
typedef struct {
  double first_ms, longest_ms, most_cpu_ms, longest_frame_ms;
  long longest_waited, longest_preempted;
} steps;

/* Calls field `name` of the table at `mod` with the integer arguments
** given (0 or 1 of them) and keeps nres results; 0 or raises nothing:
** reports and returns -1 on an error. */
static int call(lua_State *L, int mod, const char *name, int nargs, lua_Integer arg, int nres) {
  lua_pushcfunction(L, traceback);
  int h = lua_gettop(L);
  lua_getfield(L, mod, name);
  if (nargs) lua_pushinteger(L, arg);
  if (lua_pcall(L, nargs, nres, h) != LUA_OK) {
    fprintf(stderr, "frame_loop: %s: %s\n", name, lua_tostring(L, -1));
    lua_settop(L, h - 1);
    return -1;
  }
  lua_remove(L, h);
  return 0;
}

/* The frame loop: step(0) each frame until no task is left. Returns the
** frames run, or -1 on an error. */
static long run_frames(lua_State *L, int unsb, steps *st) {
  long frame;
  long long next = now_ns();
  for (frame = 1; frame <= MAX_FRAMES; frame++) {
    long w0, p0, w1, p1;
    switches(&w0, &p0);
    long long t0 = now_ns(), c0 = clock_ns(CLOCK_THREAD_CPUTIME_ID);
    if (call(L, unsb, "step", 1, 0, 1) != 0) return -1;
    double step_ms = (double)(now_ns() - t0) / 1e6;
    double cpu_ms = (double)(clock_ns(CLOCK_THREAD_CPUTIME_ID) - c0) / 1e6;
    switches(&w1, &p1);
    lua_Integer live = lua_tointeger(L, -1);
    lua_pop(L, 1);
    if (frame == 1) st->first_ms = step_ms;
    else {
      if (step_ms > st->longest_ms) {
        st->longest_ms = step_ms;
        st->longest_waited = w1 - w0;
        st->longest_preempted = p1 - p0;
      }
      if (cpu_ms > st->most_cpu_ms) st->most_cpu_ms = cpu_ms;
    }
    /* the engine's own frame work would go here */
    double frame_ms = (double)(now_ns() - next) / 1e6;
    if (frame > 1 && frame_ms > st->longest_frame_ms) st->longest_frame_ms = frame_ms;
    if (live == 0) return frame;
    next += FRAME_NS;
    long long wait = next - now_ns();
    if (wait > 0) {
      struct timespec ts = { (time_t)(wait / 1000000000LL), (long)(wait % 1000000000LL) };
      while (nanosleep(&ts, &ts) != 0) { /* EINTR: sleep the rest */ }
    } else {
      next = now_ns();             /* behind: do not try to catch up */
    }
  }
  fprintf(stderr, "frame_loop: tasks still running after %ld frames\n", MAX_FRAMES);
  return -1;
}

int main(int argc, char **argv) {
  int rc = EXIT_FAILURE;
  long jobs = argc > 2 ? strtol(argv[2], NULL, 10) : 32;
  if (jobs < 1 || jobs > 1000) {
    fprintf(stderr, "usage: frame_loop [lua-dir [jobs 1-1000]]\n");
    return EXIT_FAILURE;
  }
  lua_State *L = luaL_newstate();
  if (!L) return EXIT_FAILURE;
  luaL_openlibs(L);
  open_unsandbox(L, argc > 1 ? argv[1] : UNSANDBOX_LUA_DIR);
  lua_pushcfunction(L, traceback);
  if (luaL_loadbuffer(L, script, sizeof script - 1, "=frame_loop") != LUA_OK ||
      lua_pcall(L, 0, 1, -2) != LUA_OK ||
      luaL_dostring(L, "return require 'unsandbox'") != LUA_OK) {
    fprintf(stderr, "frame_loop: %s\n", lua_tostring(L, -1));
    lua_close(L);
    return EXIT_FAILURE;
  }
  int unsb = lua_gettop(L), mod = unsb - 1;
  steps st = {0, 0, 0, 0, 0, 0};
  long long w0 = now_ns();
  if (call(L, mod, "warm", 0, 0, 0) != 0) {
    lua_close(L);
    return EXIT_FAILURE;
  }
  printf("warm-up %.1f ms\n", (double)(now_ns() - w0) / 1e6);
  long long t0 = now_ns();
  if (call(L, mod, "start", 1, jobs, 0) == 0) {
    long frames = run_frames(L, unsb, &st);
    if (frames > 0 && call(L, mod, "check", 0, 0, 1) == 0) {
      lua_Integer ok = lua_tointeger(L, -1);
      printf("frames %ld in %.0f ms\n", frames, (double)(now_ns() - t0) / 1e6);
      printf("first step(0) %.3f ms\n", st.first_ms);
      printf("longest step(0) %.3f ms\n", st.longest_ms);
      printf("its context switches: %ld waited, %ld preempted\n", st.longest_waited,
             st.longest_preempted);
      printf("most CPU in one step(0) %.3f ms\n", st.most_cpu_ms);
      printf("longest frame %.3f ms\n", st.longest_frame_ms);
      printf("jobs %lld of %ld right\n", (long long)ok, jobs);
      if (ok == jobs) rc = EXIT_SUCCESS;
    }
  }
  lua_close(L);
  return rc;
}
