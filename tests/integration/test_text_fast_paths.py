"""The fast paths of issue 20 on real files, through the real sluiced, against Python's
answer (what the general paths gave before them): from_textfile's memchr line splitting and
large reads, to_int's plain-decimal path, json_parse's On-Demand path, and the sinks' batch
text (print and sink_to_textfile, JSON and text). Edge values: 64-bit limits, nulls,
non-ASCII, invalid UTF-8, CRLF, empty lines, a last line without newline, lines across the
256 KiB reads."""
import json
import unittest

from sluice_it import EXIT_OK, EXIT_RUNTIME, SluiceTestCase, toml_str

INT_LINES = ["0", "-0", "7", "-7", "007", "999999999999999999", "-999999999999999999",
             "1000000000000000000", "9223372036854775807", "-9223372036854775808",
             " 42 ", "1_000", "+5", "12\r"]


def pipeline(src, middle, last, sink):
    return f"""
[sources.lines]
type = "from_textfile"
path = {toml_str(src)}
{middle}
{sink.format(last=last)}
"""


FILE_SINK = """
[sinks.out]
type = "sink_to_textfile"
inputs = ["{{last}}"]
path = {path}
format = "{fmt}"
"""
PRINT_SINK = """
[sinks.out]
type = "print"
inputs = ["{last}"]
"""


class TextFastPathsTest(SluiceTestCase):

    def run_ok(self, cfg_text):
        cfg = self.write("p.toml", cfg_text)
        r = self.sluiced("run", cfg)
        self.assertExit(r, EXIT_OK)
        return r

    def file_sink(self, fmt="json"):
        return FILE_SINK.format(path=toml_str(self.path("out.txt")), fmt=fmt)

    def test_to_int_on_64_bit_edges_and_padded_text(self):
        src = self.write("ints.txt", "\n".join(INT_LINES))  # no final newline
        middle = '[operators.n]\ntype = "map"\ninputs = ["lines"]\nfunction = "to_int"\n'
        want = "".join(f"{int(x)}\n" for x in INT_LINES)
        self.run_ok(pipeline(src, middle, "n", self.file_sink()))
        self.assertEqual(self.read("out.txt"), want)
        r = self.run_ok(pipeline(src, middle, "n", PRINT_SINK))
        self.assertEqual(r.stdout, want)

    def test_out_of_range_int_fails_after_the_lines_before_it(self):
        src = self.write("ints.txt", "1\n2\n9223372036854775808\n3\n")
        middle = '[operators.n]\ntype = "map"\ninputs = ["lines"]\nfunction = "to_int"\n'
        cfg = self.write("p.toml", pipeline(src, middle, "n", self.file_sink()))
        r = self.sluiced("run", cfg)
        self.assertExit(r, EXIT_RUNTIME)
        self.assertIn("does not fit in a 64-bit int", r.stderr)

    def test_lines_crlf_non_ascii_invalid_utf8_and_chunk_boundaries(self):
        long_line = "x" * 300_000  # longer than one 256 KiB read
        lines = [b"plain", b"", b"crlf\r", "zo\u00eb \u5317\u4eac \U0001F600".encode(),
                 b"bad \xff\xfe byte", b'quote " back \\ tab \t', long_line.encode(), b"end"]
        src = self.path("in.txt")
        with open(src, "wb") as f:
            f.write(b"\n".join(lines))  # the last line has no newline
        want = [l.decode("utf-8", errors="replace") for l in lines]
        self.run_ok(pipeline(src, "", "lines", self.file_sink("json")))
        self.assertEqual([json.loads(l) for l in self.read("out.txt").splitlines()], want)
        self.run_ok(pipeline(src, "", "lines", self.file_sink("text")))
        with open(self.path("out.txt"), "rb") as f:
            self.assertEqual(f.read(), "".join(w + "\n" for w in want).encode())
        # The same file split at "\r\n" takes the general delimiter search.
        crlf = self.path("crlf.txt")
        with open(crlf, "wb") as f:
            f.write(b"\r\n".join(lines))
        cfg = pipeline(crlf, "", "lines", self.file_sink("json")).replace(
            'path = ' + toml_str(crlf), 'path = ' + toml_str(crlf) + '\ndelimiter = "\\r\\n"', 1)
        self.run_ok(cfg)
        self.assertEqual([json.loads(l) for l in self.read("out.txt").splitlines()], want)

    def test_ndjson_through_json_parse_keeps_every_value(self):
        docs = ['{"id":9223372036854775807,"min":-9223372036854775808,"f":1.5,"n":null}',
                '{"user":"zo\u00eb","tags":["\u5317\u4eac","\\u00e9\\ud83d\\ude00"],"ok":true}',
                '{"neg0":-0,"e":1e300,"nested":{"a":[{"b":[]},{}]},"esc":"q\\"b\\\\"}',
                '{"dup":1,"dup":2}', '[1,"two",[3],{"four":4}]', '"scalar"', '17', 'null']
        src = self.write("events.ndjson", "\r\n".join(docs) + "\r\n")  # CRLF: \r is whitespace
        middle = ('[operators.v]\ntype = "map"\ninputs = ["lines"]\nfunction = "json_parse"\n')
        self.run_ok(pipeline(src, middle, "v", self.file_sink()))
        got = self.read("out.txt").splitlines()
        self.assertEqual(len(got), len(docs))
        for doc, line in zip(docs, got):
            want = json.loads(doc)
            if isinstance(want, dict) and "neg0" in want:
                want["neg0"] = -0.0
            self.assertEqual(json.loads(line), want, line)
        self.assertIn('"neg0":-0.0', got[2])
        self.assertIn('"dup":2', got[3])

    def test_malformed_json_fails_naming_the_error_after_the_good_lines(self):
        src = self.write("events.ndjson", '{"a":1}\n{"a":[1,]}\n{"a":3}\n')
        middle = ('[operators.v]\ntype = "map"\ninputs = ["lines"]\nfunction = "json_parse"\n')
        cfg = self.write("p.toml", pipeline(src, middle, "v", self.file_sink()))
        r = self.sluiced("run", cfg)
        self.assertExit(r, EXIT_RUNTIME)
        self.assertIn("invalid JSON", r.stderr)


if __name__ == "__main__":
    unittest.main()
