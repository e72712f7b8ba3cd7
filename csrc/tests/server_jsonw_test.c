/*
** The JSON text writer (server/jsonw.h): strings come out byte for byte
** as jansson dumps the string ux_json_bytes makes of the same bytes (so a
** reader cannot tell which wrote a document), for every single byte, for
** random bytes, for text cut inside a multi-byte sequence, and across the
** pieces a writer with a sink hands on; structure and commas; base64.
*/
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "core/base64.h"
#include "server/http/reply.h"
#include "server/jsonw.h"
#include "server/mem.h"
#include "tests/tap.h"

/* jansson's text of the bytes, as the server wrote strings before. */
static char *reference(const char *s, size_t n, size_t *len) {
  json_t *j = ux_json_bytes(s, n);
  char *text = json_dumps(j, JSON_COMPACT | JSON_ENCODE_ANY);
  json_decref(j);
  *len = strlen(text);
  return text;
}

/* The same text as jansson's, written into an empty writer and into one
** with room for it (where a string with nothing to escape goes in one
** copy). */
static int same_as_reference(const char *s, size_t n) {
  int same = 1;
  for (int room = 0; room < 2 && same; room++) {
    ux_jw w;
    size_t got_len, want_len;
    ux_jw_init(&w);
    if (room) ux_jw_reserve(&w, 6 * n + 16);
    ux_jw_str(&w, s, n);
    char *got = ux_jw_take(&w, &got_len);
    char *want = reference(s, n, &want_len);
    same = got_len == want_len && memcmp(got, want, got_len) == 0;
    if (!same) printf("#   got  %.*s\n#   want %.*s\n", (int)(got_len > 200 ? 200 : got_len), got,
                      (int)(want_len > 200 ? 200 : want_len), want);
    free(got);
    free(want);
  }
  return same;
}

static void test_bytes(void) {
  int all = 1;
  for (int c = 0; c < 256; c++) {
    char s[3] = { 'a', (char)c, 'b' };
    if (!same_as_reference(s, 3)) { all = 0; printf("#   byte %d\n", c); }
  }
  ok(all, "every single byte is escaped or replaced as jansson does");
  ok(same_as_reference("", 0), "the empty string");
  ok(same_as_reference("\xe2\x82", 2), "a sequence cut at the end becomes U+FFFD");
  ok(same_as_reference("\xed\xa0\x80", 3), "a surrogate is not UTF-8");
  ok(same_as_reference("\xc0\xaf", 2), "an overlong form is not UTF-8");
  ok(same_as_reference("\xf4\x90\x80\x80", 4), "nothing above U+10FFFF");
  ok(same_as_reference("h\xc3\xa9llo \xf0\x9f\x98\x80 \"q\" \\ /\x7f", 20), "text of every kind");
}

static void test_random(void) {
  unsigned seed = 29;
  int all = 1;
  for (int round = 0; round < 300 && all; round++) {
    size_t n = (size_t)(rand_r(&seed) % 600);
    char *s = ux_xmalloc(n + 1);
    /* mostly text, some high bytes and control bytes, so both paths run */
    for (size_t i = 0; i < n; i++) {
      int k = rand_r(&seed) % 10;
      s[i] = (char)(k < 6 ? 'a' + rand_r(&seed) % 26 : k < 8 ? rand_r(&seed) % 256 : rand_r(&seed) % 32);
    }
    all = same_as_reference(s, n);
    free(s);
  }
  ok(all, "300 random strings come out as jansson's");
  all = 1;
  for (int round = 0; round < 300 && all; round++) {
    size_t n = (size_t)(rand_r(&seed) % 100);
    char s[100];
    for (size_t i = 0; i < n; i++) s[i] = (char)(' ' + rand_r(&seed) % 95);   /* printable ASCII */
    all = same_as_reference(s, n);
  }
  ok(all, "300 random printable strings (quotes and backslashes among them) too");
}

typedef struct { char *p; size_t len; int pieces; } collected;

static int collect(void *ctx, const char *p, size_t n) {
  collected *c = ctx;
  c->p = ux_xrealloc(c->p, c->len + n + 1);
  memcpy(c->p + c->len, p, n);
  c->len += n;
  c->pieces++;
  return 0;
}

static int refuse(void *ctx, const char *p, size_t n) { (void)ctx; (void)p; (void)n; return -1; }

static void test_sink(void) {
  size_t n = 100000, want_len;
  char *s = ux_xmalloc(n);
  for (size_t i = 0; i < n; i++) s[i] = (char)(i % 7 == 0 ? '\n' : i % 11 == 0 ? 0xe9 : 'x');
  collected c = { NULL, 0, 0 };
  ux_jw w;
  ux_jw_init_sink(&w, 4096, collect, &c);
  ux_jw_str(&w, s, n);
  ok(ux_jw_flush(&w) == 0, "the last piece is handed on");
  char *want = reference(s, n, &want_len);
  ok(c.len == want_len && memcmp(c.p, want, want_len) == 0, "pieces of 4 KiB add up to the same text");
  ok(c.pieces > 20 && ux_jw_length(&w) == want_len, "in %d pieces, the length counted", c.pieces);
  ux_jw_free(&w);
  ux_jw_init_sink(&w, 256, refuse, NULL);
  ux_jw_str(&w, s, n);
  ok(w.failed && ux_jw_flush(&w) == -1, "a sink that fails fails the writer");
  ux_jw_free(&w);
  free(want);
  free(c.p);
  free(s);
}

static void test_structure(void) {
  ux_jw w;
  size_t len;
  ux_jw_init(&w);
  ux_jw_open(&w, '{');
  ux_jw_key(&w, "count"); ux_jw_int(&w, -3);
  ux_jw_key(&w, "ok"); ux_jw_bool(&w, 1);
  ux_jw_key(&w, "none"); ux_jw_null(&w);
  ux_jw_key(&w, "items");
  ux_jw_open(&w, '[');
  ux_jw_cstr(&w, "a");
  ux_jw_open(&w, '{'); ux_jw_key(&w, "k"); ux_jw_cstr(&w, NULL); ux_jw_close(&w);
  ux_jw_open(&w, '['); ux_jw_close(&w);
  ux_jw_raw_value(&w, "{\"x\":1}", 7);
  json_t *v = json_pack("{s:i}", "y", 2);
  ux_jw_json(&w, v);
  json_decref(v);
  ux_jw_close(&w);
  ux_jw_key(&w, "b64"); ux_jw_base64(&w, (const unsigned char *)"hello", 5);
  ux_jw_close(&w);
  char *text = ux_jw_take(&w, &len);
  is_str(text, "{\"count\":-3,\"ok\":true,\"none\":null,\"items\":[\"a\",{\"k\":null},[],{\"x\":1},"
         "{\"y\":2}],\"b64\":\"aGVsbG8=\"}", "objects, arrays, commas and values");
  json_t *parsed = json_loadb(text, len, 0, NULL);
  ok(parsed != NULL, "the text parses");
  json_decref(parsed);
  free(text);

  size_t big = 10000;
  unsigned char *bytes = ux_xmalloc(big);
  for (size_t i = 0; i < big; i++) bytes[i] = (unsigned char)(i * 7);
  ux_jw_init(&w);
  ux_jw_base64(&w, bytes, big);
  text = ux_jw_take(&w, &len);
  char *want = unsb_base64_encode(bytes, big, NULL);
  ok(len == strlen(want) + 2 && text[0] == '"' && text[len - 1] == '"' && memcmp(text + 1, want, len - 2) == 0,
     "base64 in memory (encoded in place) is the encoding of the whole");
  free(text);
  collected c = { NULL, 0, 0 };
  ux_jw_init_sink(&w, 1000, collect, &c);
  ux_jw_base64(&w, bytes, big);
  ok(ux_jw_flush(&w) == 0 && c.len == strlen(want) + 2 && c.pieces > 5 && memcmp(c.p + 1, want, c.len - 2) == 0,
     "base64 through a sink, in pieces, is the same text");
  ux_jw_free(&w);
  free(c.p);
  free(want);
  free(bytes);
}

/* Integers, bare and quoted, at their ends of the range, in an array. */
static void test_integers(void) {
  ux_jw w;
  size_t len;
  ux_jw_init(&w);
  ux_jw_open(&w, '[');
  const long long vs[] = { 0, 7, -1, 10, 1234567890123LL, LLONG_MAX, LLONG_MIN };
  for (size_t i = 0; i < sizeof vs / sizeof vs[0]; i++) ux_jw_int(&w, vs[i]);
  ux_jw_int_string(&w, 1796525258);
  ux_jw_int_string(&w, LLONG_MIN);
  ux_jw_int_string(&w, 0);
  ux_jw_close(&w);
  size_t cap = w.cap;
  ux_jw_reserve(&w, 1 << 20);
  ok(w.cap >= w.len + (1 << 20) && w.cap > cap, "reserve makes room at once");
  char *text = ux_jw_take(&w, &len);
  is_str(text, "[0,7,-1,10,1234567890123,9223372036854775807,-9223372036854775808,"
         "\"1796525258\",\"-9223372036854775808\",\"0\"]", "integers in decimal, bare and quoted");
  free(text);
}

int main(void) {
  ux_mem_init();
  test_integers();
  test_bytes();
  test_random();
  test_sink();
  test_structure();
  printf("1..%d\n", tap_count);
  return tap_failed ? 1 : 0;
}
