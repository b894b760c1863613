#!/usr/bin/python3
"""to_http against a plain libcurl loop posting the same batches to the same server (issue 17).

    /usr/bin/python3 bench/http_bench.py --build-dir DIR [--quick | --smoke] [--json F]

The server is nginx (Debian `nginx-light`), started by this script on a loopback port with
one worker, keep-alive, answering every POST with `return 204` (it reads and discards the
body): a server fast enough that the senders are what is measured (Python's http.server,
which the tests use, manages a few hundred requests per second). N elements
{"id": i, "name": ..., "msg": ...} (about 60 bytes of JSON each) go out in NDJSON batches of
500, 4 requests in flight, three times each, timed from process start to exit:

  curl_loop     bench/http_curl_loop.c (built here with cc and libcurl): reads the lines
                file, posts every 500 lines as one body on a multi handle; the baseline
  to_http       sluiced run: from_textfile -> json_parse -> to_http (batch_max_events 500,
                concurrency 4), no checkpoints
  checkpointed  the same with [checkpoint] (interval 1 s) and idempotency keys: each
                checkpoint waits for every request before it
  no_http       the same pipeline into sink_to_textfile (format json, a file): what
                reading, parsing and writing the JSON again costs without any HTTP, to
                show how much of to_http's time is the pipeline around it

Both send the same bytes (compact JSON, the key order kept). Figures: elements/s (median of
3) and each as a ratio to curl_loop's median in the same run, so the noise of a shared
machine cancels out. nginx's access log is checked after each run: every POST answered 204,
the bodies' lengths adding up to the input file's (every byte once).
"""
import json
import os
import shutil
import socket
import subprocess
import tempfile
import time

from bench_support import Skip, log, ratio_rows, run  # beside this file

HERE = os.path.dirname(os.path.abspath(__file__))
SIZES = {"full": 1_000_000, "quick": 200_000, "smoke": 5_000}
REPEAT = {"full": 3, "quick": 3, "smoke": 1}
BATCH = 500
CONCURRENCY = 4

NGINX_CONF = """
worker_processes 1;
daemon off;
pid {d}/nginx.pid;
error_log {d}/error.log warn;
events {{ worker_connections 256; }}
http {{
  log_format bench '$request_method $status $http_content_length';
  access_log {d}/access.log bench;
  client_body_temp_path {d}/body;
  proxy_temp_path {d}/proxy;
  fastcgi_temp_path {d}/fastcgi;
  uwsgi_temp_path {d}/uwsgi;
  scgi_temp_path {d}/scgi;
  client_max_body_size 64m;
  keepalive_requests 1000000;
  server {{
    listen 127.0.0.1:{port};
    location / {{ return 204; }}
  }}
}}
"""


def free_port():
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def start_nginx(d):
    nginx = shutil.which("nginx") or "/usr/sbin/nginx"
    if not os.path.exists(nginx):
        raise Skip("nginx is not installed (Debian nginx-light: scripts/setup.sh --bench)")
    port = free_port()
    conf = os.path.join(d, "nginx.conf")
    with open(conf, "w") as f:
        f.write(NGINX_CONF.format(d=d, port=port))
    proc = subprocess.Popen([nginx, "-c", conf, "-e", os.path.join(d, "error.log")],
                            stdout=subprocess.DEVNULL, stderr=subprocess.PIPE)
    deadline = time.monotonic() + 10
    while time.monotonic() < deadline:
        if proc.poll() is not None:
            raise RuntimeError(f"nginx exited: {proc.stderr.read().decode()[-2000:]}")
        try:
            socket.create_connection(("127.0.0.1", port), timeout=0.2).close()
            return proc, port
        except OSError:
            time.sleep(0.05)
    proc.kill()
    raise RuntimeError("nginx did not listen within 10 s")


def build_baseline(d):
    cc = shutil.which("cc")
    if cc is None:
        raise Skip("no C compiler")
    flags = subprocess.run(["pkg-config", "--cflags", "--libs", "libcurl"], capture_output=True,
                           text=True)
    if flags.returncode != 0:
        raise Skip("libcurl's pkg-config file is missing (libcurl4-openssl-dev)")
    exe = os.path.join(d, "http_curl_loop")
    subprocess.run([cc, "-O2", "-o", exe, os.path.join(HERE, "http_curl_loop.c"),
                    *flags.stdout.split()], check=True)
    return exe


def http_bench(build, mode, tmp):
    sluiced = os.path.join(build, "host", "sluiced")
    plugins = os.path.join(build, "plugins-out")
    if not os.path.exists(sluiced) or not any("http_sink" in f for f in os.listdir(plugins)):
        raise Skip(f"{sluiced} or the http plugin is not built")
    n, repeat = SIZES[mode], REPEAT[mode]
    d = tempfile.mkdtemp(prefix="httpbench-", dir=tmp)
    os.chmod(d, 0o755)
    baseline = build_baseline(d)
    lines = os.path.join(d, "rows.jsonl")
    with open(lines, "w") as f:
        for i in range(n):
            f.write(json.dumps({"id": i, "name": f"name-{i}", "msg": "the quick brown fox"},
                               separators=(",", ":")) + "\n")
    total = os.path.getsize(lines)
    nginx, port = start_nginx(d)
    url = f"http://127.0.0.1:{port}/ingest"
    access = os.path.join(d, "access.log")
    try:
        def config(checkpoint):
            ck = (f'[checkpoint]\ninterval_ms = 1000\ndir = "{d}/ck"\n' if checkpoint else "")
            keys = 'idempotency_key_header = "Idempotency-Key"\n' if checkpoint else ""
            return f"""name = "httpbench"
{ck}
[sources.lines]
type = "from_textfile"
path = "{lines}"
[operators.rows]
type = "map"
inputs = ["lines"]
function = "json_parse"
[sinks.out]
type = "to_http"
inputs = ["rows"]
url = "{url}"
batch_max_events = {BATCH}
batch_max_bytes = 16777216
concurrency = {CONCURRENCY}
{keys}"""

        no_http = config(False).split("[sinks.out]")[0] + (
            f'[sinks.out]\ntype = "sink_to_textfile"\ninputs = ["rows"]\n'
            f'path = "{d}/out.jsonl"\nformat = "json"\n')
        variants = {
            "curl_loop": [baseline, url, lines, str(BATCH), str(CONCURRENCY)],
            "to_http": config(False),
            "checkpointed": config(True),
            "no_http": no_http,
        }
        times = {k: [] for k in variants}
        for _ in range(repeat):
            for name, what in variants.items():
                open(access, "w").close()
                os.kill(nginx.pid, 10)  # SIGUSR1: reopen the (emptied) log
                if isinstance(what, str):
                    cfg = os.path.join(d, f"{name}.toml")
                    with open(cfg, "w") as f:
                        f.write(what)
                    shutil.rmtree(f"{d}/ck", ignore_errors=True)
                    cmd = [sluiced, "run", cfg, "--plugin-dir", plugins]
                else:
                    cmd = what
                time.sleep(0.2)
                t0 = time.monotonic()
                cp = subprocess.run(cmd, capture_output=True, text=True, timeout=3600,
                                    env=dict(os.environ, SLUICE_PLUGIN_PATH=""))
                elapsed = time.monotonic() - t0
                if cp.returncode != 0:
                    raise RuntimeError(f"{name}: exit {cp.returncode}: {cp.stderr[-2000:]}")
                if name == "no_http":
                    if os.path.getsize(f"{d}/out.jsonl") != total:
                        raise RuntimeError("no_http: the output differs from the input")
                    times[name].append(elapsed)
                    continue
                # Every byte of the input once: the bodies' lengths add up to the file's
                # (a checkpoint seals a partial batch, so there may be a few more requests).
                deadline = time.monotonic() + 10
                while True:  # nginx writes its log line after the answer
                    with open(access) as f:
                        got = [line.split() for line in f]
                    sent = sum(int(g[2]) for g in got if g[2].isdigit())
                    if sent >= total or time.monotonic() > deadline:
                        break
                    time.sleep(0.05)
                if sent != total or any(g[0] != "POST" or g[1] != "204" for g in got):
                    raise RuntimeError(f"{name}: nginx logged {len(got)} requests with {sent} "
                                       f"body bytes, expected {total}, all POSTs answered 204")
                times[name].append(elapsed)
    finally:
        nginx.terminate()
        nginx.wait(10)
    out = {"elements": n, "batch": BATCH, "concurrency": CONCURRENCY}
    log(f"\nto_http, {n} elements (~60 bytes of JSON), NDJSON batches of {BATCH}, "
        f"{CONCURRENCY} in flight, nginx answering 204; median of {repeat}; "
        f"ratio = curl_loop's time / this time (1.0 = as fast as the plain libcurl loop)")
    out.update(ratio_rows(times, "curl_loop", n, "elements", width=12))
    return out


if __name__ == "__main__":
    run(__doc__, "http", http_bench)
