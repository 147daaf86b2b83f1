"""kvcache: the KV cache of LLM inference, from Python.

Bindings (cffi, over the public C headers) of the kvcache C library:
  plan(config, ...)            a model's cache plan (the `kvcache plan --json` document);
                               plan(...).caches() allocates its caches as NumPy arrays (torch=True: tensors)
  Manager(plan | layers, ...)  block manager: allocate_slots, free, block tables, step metadata;
                               close() or `with plan.manager() as m:` frees it at once
  attention(q, k, v, ...)      the fused attention operator on NumPy arrays / torch CPU tensors
  write_slots, write_slots_quant, write_contiguous   cache writes, in place
  run(model_dir, prompts, ...) the standalone runner (greedy ids, optional logits)
  Engine(model_dir, ...)       the C engine (continuous batching, prefix caching): add_request, step, abort
  AsyncEngine(engine)          the engine stepped on a background thread, streaming tokens to asyncio
  kvcache.serve                an OpenAI-compatible HTTP server (`python -m kvcache.serve MODEL_DIR`)
  kvcache.plot                 matplotlib pictures (needs the "plot" extra)
Errors raise kvcache.Error subclasses carrying the status and the library's message.
"""
from .arrays import view_as
from .async_engine import AsyncEngine
from .engine import Engine, RequestOutput, SamplingParams, TokenLogprob
from .errors import DoubleFree, Error, InternalError, InvalidArgument, OutOfMemory, OutOfRange, QueueFull
from .manager import Manager, StepKey, StepMetadata
from .ops import attention, cpu_isa, write_contiguous, write_slots, write_slots_quant
from .plan import Plan, parse_bytes, plan
from .storage import Caches
from .runner import run

__version__ = "0.1.0"

__all__ = ["plan", "Plan", "Caches", "parse_bytes", "Manager", "StepMetadata", "StepKey", "attention", "write_slots",
           "write_slots_quant", "write_contiguous", "cpu_isa", "run", "view_as", "Engine", "AsyncEngine",
           "SamplingParams", "RequestOutput", "TokenLogprob", "Error", "InvalidArgument", "OutOfRange", "DoubleFree",
           "OutOfMemory", "InternalError", "QueueFull"]
