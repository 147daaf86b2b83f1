"""The server's Prometheus metrics (/metrics): the engine's counters read at
scrape time, and the latencies and token counts of the requests served."""
import prometheus_client as prom
from prometheus_client.core import CounterMetricFamily, GaugeMetricFamily

_LATENCY_BUCKETS = (0.001, 0.0025, 0.005, 0.01, 0.025, 0.05, 0.075, 0.1, 0.15, 0.2, 0.3, 0.4, 0.5, 0.75, 1.0, 2.5,
                    5.0, 10.0, 20.0, 40.0, 80.0)


class _EngineCollector:
    def __init__(self, engine):
        self._engine = engine

    def collect(self):
        s = self._engine.stats()
        gauges = (("kvcache_num_requests_running", "Requests running in the engine (holding KV).", s["running"]),
                  ("kvcache_num_requests_waiting", "Requests waiting for admission.", s["waiting"]),
                  ("kvcache_kv_cache_usage_perc", "Used fraction of the fullest KV block pool (0..1).",
                   s["kv_usage"]),
                  ("kvcache_kv_cache_blocks_in_use", "KV blocks held by requests, all pools.", s["kv_blocks_in_use"]))
        for name, doc, value in gauges:
            yield GaugeMetricFamily(name, doc, value=value)
        counters = (("kvcache_prefix_cache_queries", "Prompt tokens looked up in the prefix cache at admission.",
                     s["prefix_query_tokens"]),
                    ("kvcache_prefix_cache_hits", "Prompt tokens found in the prefix cache at admission.",
                     s["prefix_hit_tokens"]),
                    ("kvcache_num_preemptions", "Requests preempted (KV freed, recomputed later).", s["preemptions"]),
                    ("kvcache_engine_steps", "Engine steps that ran the model.", s["steps"]))
        for name, doc, value in counters:
            yield CounterMetricFamily(name, doc, value=value)


class Metrics:
    """One registry per server (several servers may live in one process)."""

    def __init__(self, engine):
        self.registry = prom.CollectorRegistry()
        self.registry.register(_EngineCollector(engine))
        r = self.registry
        self.ttft = prom.Histogram("kvcache_time_to_first_token_seconds", "From the request's arrival to its first token.",
                                   buckets=_LATENCY_BUCKETS, registry=r)
        self.itl = prom.Histogram("kvcache_inter_token_latency_seconds", "Between a request's successive tokens.",
                                  buckets=_LATENCY_BUCKETS, registry=r)
        self.e2e = prom.Histogram("kvcache_e2e_request_latency_seconds", "From arrival to the last token.",
                                  buckets=_LATENCY_BUCKETS, registry=r)
        self.prompt_tokens = prom.Counter("kvcache_prompt_tokens", "Prompt tokens of the requests admitted.",
                                          registry=r)
        self.generation_tokens = prom.Counter("kvcache_generation_tokens", "Tokens generated.", registry=r)
        self.requests = prom.Counter("kvcache_request_success", "Requests ended, by finish reason.",
                                     ["finished_reason"], registry=r)

    def exposition(self):
        return prom.generate_latest(self.registry), prom.CONTENT_TYPE_LATEST
