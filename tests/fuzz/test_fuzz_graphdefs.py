"""Short fuzz profile, GraphDefs: TF-written fixtures (tests/data) mutated by every kind
in fuzz_strategies.MUTATIONS end in a result or one of TF's error classes."""

from __future__ import annotations

import pytest
from conftest import check_outcome, short_profile
from fuzz_strategies import graphdef_cases
from hypothesis import given


@pytest.mark.filterwarnings("ignore")  # edge values make NumPy warn
@short_profile(max_examples=1100)
@given(case=graphdef_cases())
def test_mutated_tf_graph_defs_end_in_a_result_or_a_tf_error(case, fuzz_runner):
    check_outcome(fuzz_runner.run(case), case)
