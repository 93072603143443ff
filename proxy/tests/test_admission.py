"""Admission on its own: measured costs, quick tools, and when a call is refused with when to retry."""

from __future__ import annotations

from gaia_env.admission import DEFAULT_COST_S, MAX_RETRY_AFTER_S, QUICK_CALL_S, Admission


def test_a_tools_cost_is_its_moving_average_and_unknown_tools_cost_the_mean() -> None:
    admission = Admission(max_queue_s=10)
    assert admission.cost("new") == DEFAULT_COST_S
    admission.record("read", 1.0)
    admission.record("read", 2.0)
    assert admission.cost("read") == 1.2  # the newest call weighs a fifth
    admission.record("list", 0.2)
    assert admission.cost("other") == (1.2 + 0.2) / 2


def test_a_tool_is_quick_only_once_measured_quick() -> None:
    admission = Admission(max_queue_s=10)
    assert not admission.quick("list_formats")  # unmeasured: a burst of a new tool is not let through
    admission.record("list_formats", 0.002)
    admission.record("ocr", 2.5)
    assert admission.quick("list_formats") and not admission.quick("ocr")
    for _ in range(20):
        admission.record("list_formats", 10 * QUICK_CALL_S)  # it became slow: it waits like the rest
    assert not admission.quick("list_formats")


def test_a_call_waits_when_the_queue_drains_in_time() -> None:
    admission = Admission(max_queue_s=10)
    admission.record("nap", 5.0)
    assert admission.refusal("nap", queued_s=10.0, slots=2, time_left_s=60) is None


def test_past_the_queue_bound_the_call_is_told_when_the_queue_has_drained_to_half() -> None:
    admission = Admission(max_queue_s=6)
    admission.record("nap", 5.0)
    assert admission.refusal("nap", queued_s=10.0, slots=1, time_left_s=60) == 7  # 10 - 6 / 2
    assert admission.refusal("nap", queued_s=1000.0, slots=1, time_left_s=2000) == MAX_RETRY_AFTER_S


def test_a_call_that_would_miss_its_own_deadline_is_refused() -> None:
    admission = Admission(max_queue_s=10)
    admission.record("nap", 5.0)
    assert admission.refusal("nap", queued_s=4.0, slots=1, time_left_s=8.0) == 1


def test_without_a_slot_the_call_is_told_to_come_back_shortly() -> None:
    assert Admission(max_queue_s=10).refusal("nap", queued_s=0.0, slots=0, time_left_s=60) == 1
