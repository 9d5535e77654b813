"""Planning: verified work items, their order (prefix trie, interleavings), the frozen manifest."""

from rotscope.plan.manifest import build_manifest, read_manifest, write_manifest
from rotscope.plan.schedule import prefill_bounds, prefix_order, shuffled_order
from rotscope.plan.workitems import Plan, build_plan, longest_reply, select_cases

__all__ = [
    "Plan",
    "build_manifest",
    "build_plan",
    "longest_reply",
    "prefill_bounds",
    "prefix_order",
    "read_manifest",
    "select_cases",
    "shuffled_order",
    "write_manifest",
]
