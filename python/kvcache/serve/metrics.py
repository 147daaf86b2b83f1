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


# vLLM's names of the same values (its dashboards, autoscalers and routers read them), each labelled model_name
_VLLM_NAMES = {"kvcache_num_requests_running": ("vllm:num_requests_running",),
               "kvcache_num_requests_waiting": ("vllm:num_requests_waiting",),
               "kvcache_kv_cache_usage_perc": ("vllm:kv_cache_usage_perc",),
               "kvcache_prefix_cache_queries": ("vllm:prefix_cache_queries",),
               "kvcache_prefix_cache_hits": ("vllm:prefix_cache_hits",),
               "kvcache_num_preemptions": ("vllm:num_preemptions",),
               "kvcache_time_to_first_token_seconds": ("vllm:time_to_first_token_seconds",),
               "kvcache_inter_token_latency_seconds": ("vllm:inter_token_latency_seconds",
                                                       "vllm:time_per_output_token_seconds"),
               "kvcache_e2e_request_latency_seconds": ("vllm:e2e_request_latency_seconds",),
               "kvcache_request_queue_time_seconds": ("vllm:request_queue_time_seconds",),
               "kvcache_request_prefill_time_seconds": ("vllm:request_prefill_time_seconds",),
               "kvcache_request_decode_time_seconds": ("vllm:request_decode_time_seconds",),
               "kvcache_request_inference_time_seconds": ("vllm:request_inference_time_seconds",),
               "kvcache_request_time_per_output_token_seconds": ("vllm:request_time_per_output_token_seconds",),
               "kvcache_request_prefill_kv_computed_tokens": ("vllm:request_prefill_kv_computed_tokens",),
               "kvcache_prompt_tokens": ("vllm:prompt_tokens",),
               "kvcache_generation_tokens": ("vllm:generation_tokens",),
               "kvcache_request_success": ("vllm:request_success",),
               "kvcache_request_prompt_tokens": ("vllm:request_prompt_tokens",),
               "kvcache_request_generation_tokens": ("vllm:request_generation_tokens",),
               "kvcache_request_params_n": ("vllm:request_params_n",),
               "kvcache_request_params_max_tokens": ("vllm:request_params_max_tokens",)}


def _buckets_1_2_5(most):
    """1, 2, 5, 10, 20, 50, ... up to most (vLLM's buckets of its per-request token histograms)."""
    out, scale = [], 1
    while True:
        for m in (1, 2, 5):
            if m * scale > most:
                return tuple(out)
            out.append(m * scale)
        scale *= 10


class _VllmNames:
    """The families of `collectors` that vLLM also has, again under vLLM's names with its model_name label (read at
    scrape time from the same values: nothing is counted twice)."""

    def __init__(self, collectors, model_name):
        self._collectors, self._model = collectors, model_name

    def collect(self):
        for collector in self._collectors:
            for family in collector.collect():
                for name in _VLLM_NAMES.get(family.name, ()):
                    out = prom.Metric(name, family.documentation, family.type)
                    for sample in family.samples:  # kvcache_x_total -> vllm:x_total, kvcache_x_bucket -> ...
                        out.add_sample(name + sample.name[len(family.name):],
                                       {**sample.labels, "model_name": self._model}, sample.value)
                    yield out


class Metrics:
    """One registry per server (several servers may live in one process). model_name: the label of the vLLM
    names."""

    def __init__(self, engine, model_name, max_model_len):
        self.registry = prom.CollectorRegistry()
        engine_collector = _EngineCollector(engine)
        self.registry.register(engine_collector)
        r = self.registry
        self.ttft = prom.Histogram("kvcache_time_to_first_token_seconds", "From the request's arrival to its first token.",
                                   buckets=_LATENCY_BUCKETS, registry=r)
        self.itl = prom.Histogram("kvcache_inter_token_latency_seconds", "Between a request's successive tokens.",
                                  buckets=_LATENCY_BUCKETS, registry=r)
        self.e2e = prom.Histogram("kvcache_e2e_request_latency_seconds", "From arrival to the last token.",
                                  buckets=_LATENCY_BUCKETS, registry=r)
        # a choice's phases in its engine (vLLM's, from the engine's RequestTimes): queue + prefill + decode is the
        # e2e latency less the server's own share (parsing, tokenizing, the hops to and from the engine thread)
        phases = (("queue_time", "From its admission to the engine to the start of the first step that ran it."),
                  ("prefill_time", "From its first scheduled step's start to its first token."),
                  ("decode_time", "From its first token to its last."),
                  ("inference_time", "From its first scheduled step's start to its last token (prefill + decode)."),
                  ("time_per_output_token", "Its decode time over its tokens after the first (0 for one token)."))
        self.phases = {name: prom.Histogram(f"kvcache_request_{name}_seconds", doc, buckets=_LATENCY_BUCKETS,
                                            registry=r) for name, doc in phases}
        self.prompt_tokens = prom.Counter("kvcache_prompt_tokens", "Prompt tokens of the requests admitted.",
                                          registry=r)
        self.generation_tokens = prom.Counter("kvcache_generation_tokens", "Tokens generated.", registry=r)
        self.requests = prom.Counter("kvcache_request_success", "Requests ended, by finish reason.",
                                     ["finished_reason"], registry=r)
        tokens = _buckets_1_2_5(max_model_len)
        self.request_prompt = prom.Histogram("kvcache_request_prompt_tokens", "Prompt tokens of each request ended.",
                                             buckets=tokens, registry=r)
        self.request_generation = prom.Histogram("kvcache_request_generation_tokens",
                                                 "Tokens each request ended generated.", buckets=tokens, registry=r)
        self.request_n = prom.Histogram("kvcache_request_params_n", "The n (choices) of each request ended's body.",
                                        buckets=(1, 2, 5, 10, 20), registry=r)
        self.request_max_tokens = prom.Histogram("kvcache_request_params_max_tokens",
                                                 "The max_tokens each request ended ran with.", buckets=tokens,
                                                 registry=r)
        self.request_computed = prom.Histogram("kvcache_request_prefill_kv_computed_tokens",
                                               "Prompt tokens each request ended computed (not from the prefix cache).",
                                               buckets=tokens, registry=r)
        r.register(_VllmNames((engine_collector, self.ttft, self.itl, self.e2e, *self.phases.values(),
                               self.prompt_tokens, self.generation_tokens, self.requests, self.request_prompt,
                               self.request_generation, self.request_n, self.request_max_tokens,
                               self.request_computed), model_name))

    def ended(self, n_prompt, n_generated, n, max_tokens, n_cached, times):
        """A request (one choice) ended: its per-request histograms, as vLLM's (one observation per choice); times:
        its engine.RequestTimes (None, a choice that ran no engine request: no phases)."""
        self.request_prompt.observe(n_prompt)
        self.request_generation.observe(n_generated)
        self.request_n.observe(n)
        self.request_max_tokens.observe(max_tokens)
        if times is None:
            return
        self.request_computed.observe(n_prompt - n_cached)
        decode = times.last_token - times.first_token
        for name, value in (("queue_time", times.scheduled - times.queued),
                            ("prefill_time", times.first_token - times.scheduled), ("decode_time", decode),
                            ("inference_time", times.last_token - times.scheduled),
                            ("time_per_output_token", decode / (n_generated - 1) if n_generated > 1 else 0.0)):
            self.phases[name].observe(value)

    def exposition(self):
        return prom.generate_latest(self.registry), prom.CONTENT_TYPE_LATEST
