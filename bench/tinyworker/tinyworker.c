/*
 * tinyworker: the cheapest stdio MCP worker gemgate's idle-session benchmark could find.
 * It reads NDJSON on stdin; every request (a line with a numeric or string "id" and a
 * "method") gets an answer: initialize gets an InitializeResult, tools/call gets an echo-ish
 * text result, anything else an empty result. Notifications are ignored. No allocation, no
 * libc stdio: a static binary of a few KiB of private memory per process.
 *
 *   gcc -O2 -static -o tinyworker tinyworker.c
 */
#define _GNU_SOURCE
#include <string.h>
#include <unistd.h>

static char in[1 << 16];
static char out[1 << 16];
static size_t inlen;

static void put(size_t *n, const char *s, size_t len) {
	if (*n + len < sizeof out) {
		memcpy(out + *n, s, len);
		*n += len;
	}
}

static void answer(const char *line, size_t len) {
	const char *id = memmem(line, len, "\"id\":", 5);
	const char *method = memmem(line, len, "\"method\":", 9);
	if (!id || !method)
		return; /* a notification or a response: nothing to say */
	id += 5;
	while (*id == ' ')
		id++;
	const char *end = id;
	if (*end == '"') {
		end++;
		while (end < line + len && *end != '"')
			end++;
		end++;
	} else {
		while (end < line + len && *end != ',' && *end != '}')
			end++;
	}
	size_t n = 0;
	put(&n, "{\"jsonrpc\":\"2.0\",\"id\":", 22);
	put(&n, id, (size_t)(end - id));
	if (memmem(line, len, "\"initialize\"", 12)) {
		const char *r = ",\"result\":{\"protocolVersion\":\"2025-06-18\",\"capabilities\":{\"tools\":{}},"
				"\"serverInfo\":{\"name\":\"tinyworker\",\"version\":\"1\"}}}\n";
		put(&n, r, strlen(r));
	} else if (memmem(line, len, "\"tools/call\"", 12)) {
		const char *r = ",\"result\":{\"content\":[{\"type\":\"text\",\"text\":\"ok\"}]}}\n";
		put(&n, r, strlen(r));
	} else {
		put(&n, ",\"result\":{}}\n", 14);
	}
	size_t off = 0;
	while (off < n) {
		ssize_t w = write(1, out + off, n - off);
		if (w <= 0)
			_exit(0);
		off += (size_t)w;
	}
}

int main(void) {
	for (;;) {
		ssize_t r = read(0, in + inlen, sizeof in - inlen);
		if (r <= 0)
			return 0;
		inlen += (size_t)r;
		char *start = in, *nl;
		while ((nl = memchr(start, '\n', inlen - (size_t)(start - in))) != NULL) {
			answer(start, (size_t)(nl - start));
			start = nl + 1;
		}
		inlen -= (size_t)(start - in);
		memmove(in, start, inlen);
		if (inlen == sizeof in)
			inlen = 0; /* a line longer than the buffer: drop it */
	}
}
