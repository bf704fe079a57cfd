-- Shared by the bench's wrk scripts (dofile'd by each): setup() numbers the threads (``tid`` in
-- each, for names no two threads share); done() prints one line
--   WRK {json}
-- with the requests, the errors (non-2xx/3xx responses in errors.status) and the latency
-- distribution in microseconds, which bench/hub.py parses beside wrk's own --latency text.
function done(summary, latency, requests)
  local e = summary.errors
  io.write(string.format(
    'WRK {"requests":%d,"duration_us":%d,"bytes":%d,' ..
    '"errors":{"connect":%d,"read":%d,"write":%d,"status":%d,"timeout":%d},' ..
    '"latency_us":{"p50":%d,"p90":%d,"p99":%d,"p999":%d,"max":%d,"mean":%.1f}}\n',
    summary.requests, summary.duration, summary.bytes,
    e.connect, e.read, e.write, e.status, e.timeout,
    latency:percentile(50), latency:percentile(90), latency:percentile(99), latency:percentile(99.9),
    latency.max, latency.mean))
end

local threads = 0
function setup(thread)
  thread:set("tid", threads)
  threads = threads + 1
end
