/* The baseline of bench/http_bench.py: a plain libcurl loop that posts the lines of FILE,
 * BATCH lines per request (an NDJSON body, the same bytes to_http sends for the same
 * elements), with up to CONCURRENCY requests in flight on one multi handle (connections
 * kept alive), and checks that every answer is 2xx. No parsing, no retries, no
 * checkpoints: what sending the same batches costs with nothing else around it.
 *
 *   http_curl_loop URL FILE BATCH CONCURRENCY      prints the number of requests sent
 *
 * Built by bench/http_bench.py with `cc -O2 ... $(pkg-config --cflags --libs libcurl)`. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <curl/curl.h>

struct body {
  const char* data;
  size_t size;
};

static char* read_file(const char* path, size_t* size) {
  FILE* f = fopen(path, "rb");
  if (f == NULL) return NULL;
  fseek(f, 0, SEEK_END);
  long n = ftell(f);
  fseek(f, 0, SEEK_SET);
  char* buf = malloc((size_t)n + 1);
  if (buf == NULL || fread(buf, 1, (size_t)n, f) != (size_t)n) {
    fclose(f);
    free(buf);
    return NULL;
  }
  fclose(f);
  *size = (size_t)n;
  return buf;
}

/* Splits `data` into bodies of `batch` lines (each line with its '\n'). */
static struct body* split(const char* data, size_t size, long batch, size_t* count) {
  size_t cap = 1024, n = 0;
  struct body* out = malloc(cap * sizeof *out);
  size_t start = 0, pos = 0;
  long lines = 0;
  while (pos < size) {
    const char* nl = memchr(data + pos, '\n', size - pos);
    pos = nl == NULL ? size : (size_t)(nl - data) + 1;
    if (++lines == batch || pos == size) {
      if (n == cap) out = realloc(out, (cap *= 2) * sizeof *out);
      out[n].data = data + start;
      out[n].size = pos - start;
      ++n;
      start = pos;
      lines = 0;
    }
  }
  *count = n;
  return out;
}

static size_t discard(char* p, size_t s, size_t n, void* u) {
  (void)p;
  (void)u;
  return s * n;
}

int main(int argc, char** argv) {
  if (argc != 5) {
    fprintf(stderr, "usage: %s URL FILE BATCH CONCURRENCY\n", argv[0]);
    return 2;
  }
  const char* url = argv[1];
  long batch = atol(argv[3]);
  int concurrency = atoi(argv[4]);
  size_t size = 0;
  char* data = read_file(argv[2], &size);
  if (data == NULL) {
    perror(argv[2]);
    return 2;
  }
  size_t count = 0;
  struct body* bodies = split(data, size, batch, &count);

  curl_global_init(CURL_GLOBAL_DEFAULT);
  CURLM* multi = curl_multi_init();
  struct curl_slist* headers = curl_slist_append(NULL, "Content-Type: application/x-ndjson");
  headers = curl_slist_append(headers, "Expect:");
  CURL** handles = calloc((size_t)concurrency, sizeof *handles);
  for (int i = 0; i < concurrency; ++i) handles[i] = curl_easy_init();
  CURL** idle = calloc((size_t)concurrency, sizeof *idle);
  int idle_n = concurrency;
  for (int i = 0; i < concurrency; ++i) idle[i] = handles[i];

  size_t next = 0, done = 0;
  int failed = 0;
  while (done < count && !failed) {
    while (idle_n > 0 && next < count) {
      CURL* e = idle[--idle_n];
      curl_easy_setopt(e, CURLOPT_URL, url);
      curl_easy_setopt(e, CURLOPT_NOSIGNAL, 1L);
      curl_easy_setopt(e, CURLOPT_HTTPHEADER, headers);
      curl_easy_setopt(e, CURLOPT_POSTFIELDS, bodies[next].data);
      curl_easy_setopt(e, CURLOPT_POSTFIELDSIZE_LARGE, (curl_off_t)bodies[next].size);
      curl_easy_setopt(e, CURLOPT_WRITEFUNCTION, discard);
      curl_multi_add_handle(multi, e);
      ++next;
    }
    int running = 0;
    curl_multi_perform(multi, &running);
    int left = 0;
    CURLMsg* m;
    while ((m = curl_multi_info_read(multi, &left)) != NULL) {
      if (m->msg != CURLMSG_DONE) continue;
      long status = 0;
      curl_easy_getinfo(m->easy_handle, CURLINFO_RESPONSE_CODE, &status);
      if (m->data.result != CURLE_OK || status < 200 || status >= 300) {
        fprintf(stderr, "request failed: %s, HTTP %ld\n", curl_easy_strerror(m->data.result),
                status);
        failed = 1;
      }
      curl_multi_remove_handle(multi, m->easy_handle);
      idle[idle_n++] = m->easy_handle;
      ++done;
    }
    /* Wait only when every slot is busy or nothing is left to send: a freed slot is
     * refilled at once. */
    const int can_start = idle_n > 0 && next < count;
    if (done < count && !failed && !can_start) curl_multi_poll(multi, NULL, 0, 1000, NULL);
  }
  printf("%zu\n", done);
  for (int i = 0; i < concurrency; ++i) curl_easy_cleanup(handles[i]);
  curl_multi_cleanup(multi);
  curl_slist_free_all(headers);
  free(handles);
  free(idle);
  free(bodies);
  free(data);
  curl_global_cleanup();
  return failed;
}
