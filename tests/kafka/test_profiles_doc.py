"""docs/profiles.md shows the profile table the code has, and documents every switch and mutant."""

import os
import re

from sim.kafka.profiles import MUTANTS, markdown_table, switch_names
from tests.conftest import ROOT

DOC = os.path.join(ROOT, "docs", "profiles.md")


def test_profile_table_matches_code():
    text = open(DOC, encoding="utf-8").read()
    block = re.search(r"<!-- profile-table:start -->\n(.*)<!-- profile-table:end -->", text, re.S)
    assert block and block.group(1) == markdown_table(), \
        "regenerate the table: python -c 'from sim.kafka.profiles import markdown_table; print(markdown_table())'"


def test_every_switch_and_mutant_is_explained():
    text = open(DOC, encoding="utf-8").read()
    after_table = text.split("<!-- profile-table:end -->", 1)[1]
    for name in switch_names():
        assert f"| `{name}` |" in after_table, name
    for mutant in MUTANTS:
        assert f"`{mutant}`" in after_table, mutant


def test_every_switch_has_a_role_and_the_doc_shows_them():
    from sim.kafka.roles import INTER_BROKER, ROLES, markdown_roles_table
    assert list(ROLES) == switch_names()
    assert set(INTER_BROKER) <= set(ROLES)
    text = open(DOC, encoding="utf-8").read()
    block = re.search(r"<!-- roles-table:start -->\n(.*)<!-- roles-table:end -->", text, re.S)
    assert block and block.group(1) == markdown_roles_table(), \
        "regenerate: python -c 'from sim.kafka.roles import markdown_roles_table as t; print(t())'"
