"""The house rules of the app package: every activity kind has one home. (Which module may import
which is `contracts.toml`, checked by tests/unit/test_contracts.py.)"""

from __future__ import annotations

def test_every_activity_kind_has_one_view():
    from steps import ACTIVITY_KINDS

    from batchtui.activity_kinds import ACTIVITY_VIEWS

    assert set(ACTIVITY_VIEWS) == set(ACTIVITY_KINDS) - {"none"}
