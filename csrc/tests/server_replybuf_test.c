/*
** The long reply's buffer (mem.h: ux_mem_reply_buffer, ux_mem_reply_done)
** and the JSON writer that starts in it (jsonw.h: ux_jw_reserve,
** ux_jw_take): a reply's buffer comes back to the next long reply, at most
** one is kept, one over UX_MEM_REPLY_KEEP is never kept, one too small for
** a request stays kept while the request gets new memory, and a text that
** fills its buffer is taken without a copy.
*/
#include <malloc.h>
#include <stdlib.h>
#include <string.h>

#include "server/jsonw.h"
#include "server/mem.h"
#include "tests/tap.h"

#define KiB ((size_t)1024)

int main(void) {
  size_t cap = 0, cap2 = 0;
  char *a = ux_mem_reply_buffer(600 * KiB, &cap);
  ok(a && cap >= 600 * KiB && cap == malloc_usable_size(a), "a new buffer of at least the size asked");
  memset(a, 'x', 600 * KiB);
  ux_mem_reply_done(a);
  char *b = ux_mem_reply_buffer(500 * KiB, &cap2);
  ok(b == a && cap2 == cap, "the next long reply gets the buffer back, whole");

  /* only one is kept: the second one given back is freed */
  char *c = ux_mem_reply_buffer(400 * KiB, &cap2);
  ok(c != b, "with the kept buffer in use, another is new memory");
  ux_mem_reply_done(b);
  ux_mem_reply_done(c);
  char *d = ux_mem_reply_buffer(300 * KiB, &cap2);
  ok(d == b, "the first given back is the one kept");

  /* a request larger than the kept buffer: new memory, the kept one stays */
  ux_mem_reply_done(d);
  char *e = ux_mem_reply_buffer(900 * KiB, &cap2);
  ok(e != b && cap2 >= 900 * KiB, "too small a kept buffer is not handed out");
  ux_mem_reply_done(e);   /* one is kept already: e is freed */
  char *f = ux_mem_reply_buffer(550 * KiB, &cap2);
  ok(f == b, "and stays kept for a request it fits");
  ux_mem_reply_done(f);

  /* over the keep limit: never kept (had it been, hold would be freed
  ** below and the next buffer would be big) */
  char *big = ux_mem_reply_buffer(UX_MEM_REPLY_KEEP + KiB, &cap2);
  char *hold = ux_mem_reply_buffer(KiB * 300, &cap2);   /* empties the slot */
  ok(hold == b, "the kept one taken");
  ux_mem_reply_done(big);
  ux_mem_reply_done(hold);
  char *g = ux_mem_reply_buffer(300 * KiB, &cap2);
  ok(g == hold, "a buffer over UX_MEM_REPLY_KEEP was freed, not kept");
  ux_mem_reply_done(g);

  /* the writer: a long reserve starts in the kept buffer; a text is taken
  ** in place, never shrunk out of it */
  ux_jw w;
  ux_jw_init(&w);
  ux_jw_reserve(&w, UX_MEM_REPLY_MIN);
  char *start = w.p;
  ok(start == g, "a long reserve starts in the kept buffer");
  ux_jw_open(&w, '[');
  static char item[1000];
  memset(item, 'a', sizeof item - 1);
  for (int i = 0; i < 20; i++) ux_jw_cstr(&w, item);
  ux_jw_close(&w);
  size_t len;
  char *text = ux_jw_take(&w, &len);
  ok(text == start && text[len] == '\0' && text[0] == '[' && text[len - 1] == ']',
     "its text is taken in place, terminated, though mostly empty");
  ux_mem_reply_done(text);

  /* one growing by its writes: past 64 KiB it moves into the kept buffer */
  ux_jw_init(&w);
  ux_jw_open(&w, '[');
  for (int i = 0; i < 100; i++) ux_jw_cstr(&w, item);
  ux_jw_close(&w);
  ok(w.p == start, "a text written past 64 KiB moved into the kept reply buffer");
  text = ux_jw_take(&w, &len);
  ok(len > 100 * 999 && text[0] == '[' && text[len - 1] == ']' && text[len] == '\0' &&
     !memcmp(text + 1, "\"aaa", 4), "... its bytes all there (%zu)", len);
  ux_mem_reply_done(text);

  /* a short text, mostly empty: shrunk to its length, just freed after */
  ux_jw_init(&w);
  ux_jw_reserve(&w, 40 * KiB);
  ux_jw_cstr(&w, "short");
  text = ux_jw_take(&w, &len);
  ok(!strcmp(text, "\"short\"") && malloc_usable_size(text) < 40 * KiB,
     "a short, mostly empty text is shrunk to its length");
  ux_mem_reply_done(text);
  char *again = ux_mem_reply_buffer(UX_MEM_REPLY_MIN, &cap2);
  ok(again == start, "a short text given back leaves the kept buffer as it was");
  ux_mem_reply_done(again);
  return tap_done();
}
