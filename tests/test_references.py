"""references.bib: every key once (a repeated entry fails the -W build with a bibtex
data error that names only the key, long after the merge that made it); every entry a
reader can follow (a DOI, an arXiv number or a URL, which the bibliography links), and
none that cites the course's own source files instead of the texts they came from."""

import collections
import pathlib
import re

BIB = pathlib.Path(__file__).resolve().parents[1] / "references.bib"
ADDRESS_FIELDS = ("doi", "eprint", "url")  # what pybtex's style renders as a link
# Entries with no address found: a blog post known only by its title, author and date.
NO_KNOWN_ADDRESS = {"mehta2022demystified"}


def entries():
    """{key: the entry's fields, as text}."""
    return dict(re.findall(r"^@\w+\{([^,\s]+),\n(.*?)^\}", BIB.read_text(), flags=re.M | re.S))


def addressed():
    """The keys of the entries that carry an address."""
    field = re.compile(rf"^\s*({'|'.join(ADDRESS_FIELDS)})\s*=", flags=re.M)
    return {key for key, fields in entries().items() if field.search(fields)}


def test_every_citation_key_appears_once():
    keys = re.findall(r"^@\w+\{([^,\s]+),", BIB.read_text(), flags=re.M)
    repeated = [key for key, count in collections.Counter(keys).items() if count > 1]
    assert keys and repeated == []


def test_every_entry_has_an_address_a_reader_can_follow():
    assert set(entries()) - addressed() == NO_KNOWN_ADDRESS


def test_no_entry_cites_a_course_seed_instead_of_its_source():
    assert [key for key, fields in entries().items() if re.search(r"\bseed\b", fields, re.I)] == []
