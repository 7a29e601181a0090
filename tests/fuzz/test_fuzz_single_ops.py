"""Short fuzz profile, single ops: every registered op with attrs satisfying its OpDef
and edge-valued inputs (empty, scalar, NaN/inf, extremes, wrong rank) ends in a result
or one of TF's error classes."""

from __future__ import annotations

import pytest
from conftest import check_outcome, short_profile
from fuzz_strategies import single_op_cases
from hypothesis import given


@pytest.mark.filterwarnings("ignore")  # edge values make NumPy warn
@short_profile(max_examples=900)
@given(case=single_op_cases())
def test_single_ops_with_edge_inputs_end_in_a_result_or_a_tf_error(case, fuzz_runner):
    check_outcome(fuzz_runner.run(case), case)
