"""Issue 45, items 1, 2 and 7: a page's size options get their range from the model and the hosted policy, and a run
is planned against the hosted memory and deadline before it starts (:mod:`inspector.serving.option_plan`) — the roles
probe's R and batch, Lesson 7's lengths — with the deadline binding while it runs; a share link's roles values are
read (:mod:`inspector.output.share_roles`) and left to the page to clamp."""

from __future__ import annotations

import time
from dataclasses import replace

import pytest

from inspector.analyses import roles_causal
from inspector.analyses.roles_causal import head_roles
from inspector.base.errors import DeadlineExceededError, OverBudgetError
from inspector.core.deadline import job_deadline
from inspector.output.share_roles import RolesLinkState, decode_roles, encode_roles, link_options
from inspector.serving.hosting import HOSTED_DEADLINE_S, HostingPolicy
from inspector.serving.option_plan import (
    PLANNED_SHARE,
    plan_roles,
    plan_timing,
    roles_cost,
    roles_ranges,
    timing_choices,
    timing_cost,
)

HOSTED = HostingPolicy(hosted=True, deadline_s=HOSTED_DEADLINE_S)


@pytest.fixture(scope="module")
def shapes(tiny_bert):
    """ModelInfo with the bundled models' real shapes (README "Bundled decoders"; MiniLM's config), no weights."""
    base = tiny_bert.info
    minilm = replace(base, name="all-MiniLM-L6-v2", num_layers=6, num_heads=12, num_kv_heads=12, head_dim=32,
                     hidden_size=384, vocab_size=30_522, num_parameters=22_713_216, max_positions=512,
                     head="none", causal=False)
    gemma = replace(base, name="gemma-3-270m", num_layers=18, num_heads=4, num_kv_heads=1, head_dim=256,
                    hidden_size=640, vocab_size=262_144, num_parameters=268_098_176, max_positions=32_768,
                    head="causal-lm", causal=True)
    return {"minilm": minilm, "gemma": gemma, "tiny": base}


def _fits(cost, policy) -> bool:
    return cost.bytes <= policy.job_memory_bytes and cost.seconds <= PLANNED_SHARE * policy.deadline_s


def test_the_cost_model_reproduces_the_issues_two_failures(shapes):
    """Gemma R = 256, B = 8 took the server past 9 GB; MiniLM R = 255, B = 16 ran 174.5 s at 3.6 GB peak."""
    gemma = roles_cost(shapes["gemma"], 256, 8)
    assert gemma.bytes > 9 * 10**9 and not gemma.fits(HOSTED)
    minilm = roles_cost(shapes["minilm"], 255, 16)
    assert 150 < minilm.seconds < 200 and 3.0e9 < minilm.bytes < 4.2e9 and not minilm.fits(HOSTED)
    # The defaults (R = 20, B = 8) fit on both: the bundled models' roles still run hosted as they are.
    assert roles_cost(shapes["gemma"], 20, 8).fits(HOSTED) and roles_cost(shapes["minilm"], 20, 8).fits(HOSTED)


def test_a_local_instance_offers_the_models_whole_range(shapes):
    ranges = roles_ranges(shapes["minilm"], HostingPolicy())
    assert ranges.max_repeat == 255 and ranges.max_batch == 256  # (512 − 1) // 2 positions; the probe's own cap
    assert plan_roles(shapes["gemma"], HostingPolicy(), 256, 8).values == {"repeat": 256, "batch": 8}


@pytest.mark.parametrize("model", ["minilm", "gemma"])
def test_hosted_ranges_are_the_largest_that_fit_the_budget(shapes, model):
    info = shapes[model]
    ranges = roles_ranges(info, HOSTED)
    by_positions = (info.max_positions - 1) // 2
    assert 2 <= ranges.max_repeat <= by_positions and _fits(roles_cost(info, ranges.max_repeat, 2), HOSTED)
    if ranges.max_repeat < by_positions:  # Gemma: the budget binds (MiniLM: its 512 positions do)
        assert not _fits(roles_cost(info, ranges.max_repeat + 1, 2), HOSTED)
    assert (ranges.max_repeat < by_positions) == (model == "gemma")
    at_default = roles_ranges(info, HOSTED, 20)
    assert _fits(roles_cost(info, 20, at_default.max_batch), HOSTED)
    assert not _fits(roles_cost(info, 20, at_default.max_batch + 1), HOSTED)


def test_ranges_follow_the_policy_and_the_model(shapes):
    """Not a constant: a smaller memory or a shorter deadline gives a smaller range, a larger model too."""
    info = shapes["minilm"]
    wide = roles_ranges(info, HOSTED)
    smaller = replace(HOSTED, job_memory_bytes=HOSTED.job_memory_bytes // 8)
    assert roles_ranges(info, smaller).max_repeat < wide.max_repeat
    assert roles_ranges(info, replace(HOSTED, deadline_s=10)).max_repeat < wide.max_repeat
    assert roles_ranges(shapes["gemma"], HOSTED, 20).max_batch < roles_ranges(info, HOSTED, 20).max_batch


@pytest.mark.parametrize("model, repeat, batch", [("gemma", 256, 8), ("minilm", 255, 16)])
def test_the_issues_requests_are_shrunk_with_a_notice(shapes, model, repeat, batch):
    info = shapes[model]
    plan = plan_roles(info, HOSTED, repeat, batch)
    kept = plan.values
    assert (kept["repeat"], kept["batch"]) != (repeat, batch) and kept["batch"] >= 2 and kept["repeat"] >= 2
    assert _fits(roles_cost(info, kept["repeat"], kept["batch"]), HOSTED)
    (notice,) = plan.notices
    assert notice.key == "notice.roles_shrunk" and f"R = {repeat}" in str(notice) and "make app" in str(notice)
    assert f"R = {kept['repeat']} with {kept['batch']} sequences" in str(notice) and "\n" not in str(notice)


def test_a_probe_that_never_fits_is_refused_in_one_line(shapes):
    policy = replace(HOSTED, job_memory_bytes=1024)
    assert roles_ranges(shapes["gemma"], policy).max_repeat < 2
    with pytest.raises(OverBudgetError, match="even the smallest head-roles probe") as raised:
        plan_roles(shapes["gemma"], policy, 20, 8)
    assert "\n" not in str(raised.value)


def test_the_deadline_binds_while_the_roles_run(tiny_llama, monkeypatch):
    with job_deadline(1e-9, "the Heads report"), pytest.raises(DeadlineExceededError, match="Heads report"):
        time.sleep(0.001)
        head_roles(tiny_llama, repeat=4, batch=2)
    # Between the forwards too: before each role's causal test and each group of its ablated copies.
    checks = []

    def deadline_passes_at_the_third_check(where: str = "") -> None:
        checks.append(where)
        if len(checks) == 3:
            raise DeadlineExceededError(f"stopped {where}")

    monkeypatch.setattr(roles_causal, "check_deadline", deadline_passes_at_the_third_check)
    with pytest.raises(DeadlineExceededError, match="stopped before the causal test"):
        head_roles(tiny_llama, repeat=4, batch=2, seeds=2)
    assert checks[0] == "before the causal test of induction" and "copies" in checks[1]


def test_lesson_7_offers_and_plans_only_the_lengths_the_server_allows(shapes):
    """n = 4,096 added 2.4 GB per hosted request (12 heads: 3 × 12 × 4,096² float32)."""
    info = shapes["minilm"]
    assert timing_cost(info.num_heads, info.head_dim, [4096]).bytes > 2.3e9
    offered = timing_choices(info.num_heads, info.head_dim, (128, 256, 512, 1024, 2048, 4096), HOSTED)
    assert 4096 not in offered and {128, 256, 512, 1024} <= set(offered)
    assert timing_choices(info.num_heads, info.head_dim, (4096,), HostingPolicy()) == (4096,)  # locally: anything
    plan = plan_timing(info.num_heads, info.head_dim, [4096, 128, 256], HOSTED)
    assert plan.values["lengths"] == (128, 256) and plan.notices[0].key == "notice.timing_shrunk"
    assert "4,096" in str(plan.notices[0])
    with pytest.raises(OverBudgetError, match="n = 4,096"):
        plan_timing(info.num_heads, info.head_dim, [4096], HOSTED)


def test_a_share_links_roles_values_are_read_and_bad_ones_fall_back():
    state, warnings = decode_roles({"rrepeat": str(10**6), "rbatch": "16"})
    assert state == RolesLinkState(repeat=10**6, batch=16) and warnings == ()
    assert link_options(state) == {"repeat": 10**6, "batch": 16}
    state, warnings = decode_roles({"rrepeat": "1e9", "rbatch": "9" * 13, "rseed": ["1", "2"]})
    assert state == RolesLinkState(seed=2) and [w.key for w in warnings] == ["share.bad_roles"] * 2
    assert decode_roles("not a mapping") == (RolesLinkState(), ())
    defaults = {"repeat": 20, "batch": 8, "top_k": 3, "window": 4, "seed": 0}
    assert encode_roles({**defaults, "repeat": 64}, defaults) == {"rrepeat": "64"}
