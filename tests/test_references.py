"""references.bib: every key once (a repeated entry fails the -W build with a bibtex
data error that names only the key, long after the merge that made it)."""

import collections
import pathlib
import re

BIB = pathlib.Path(__file__).resolve().parents[1] / "references.bib"


def test_every_citation_key_appears_once():
    keys = re.findall(r"^@\w+\{([^,\s]+),", BIB.read_text(), flags=re.M)
    repeated = [key for key, count in collections.Counter(keys).items() if count > 1]
    assert keys and repeated == []
