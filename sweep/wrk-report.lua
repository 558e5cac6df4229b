-- wrk script for ab-sweep.sh --client wrk: prints the run's figures as one JSON line prefixed
-- "KILN-WRK " after wrk's own report, so the report generator reads numbers, not formatted text.
-- Latencies are in microseconds, as wrk records them.
done = function(summary, latency, requests)
  local e = summary.errors
  io.write(string.format(
    'KILN-WRK {"requests":%d,"duration_us":%d,"bytes":%d,' ..
    '"errors":{"connect":%d,"read":%d,"write":%d,"status":%d,"timeout":%d},' ..
    '"latency_us":{"mean":%.1f,"p50":%d,"p90":%d,"p99":%d,"max":%d}}\n',
    summary.requests, summary.duration, summary.bytes,
    e.connect, e.read, e.write, e.status, e.timeout,
    latency.mean, latency:percentile(50), latency:percentile(90), latency:percentile(99), latency.max))
end
