"""gaia_kit.pages.zim: which language a dump is in, and the URLs its articles and links answer for."""

from __future__ import annotations

import pytest
from gaia_kit import ToolFailure
from gaia_kit.pages.zim import absolute_links, open_zim, wikipedia_language, zim_target, zim_targets, zim_url

WIKIPEDIA = {"Name": "wikipedia_de_all_2024-01"}


@pytest.mark.parametrize(
    ("metadata", "language"),
    [
        ({"Name": "wikipedia_en_all_maxi_2024-01"}, "en"),
        ({"Title": "wikipedia_pt-br_test"}, "pt-br"),
        ({"Source": "https://fr.wikipedia.org/"}, "fr"),
        ({"Name": "gutenberg_en_all"}, None),
    ],
)
def test_a_wikipedia_dump_is_known_by_its_name_or_source(metadata, language):
    assert wikipedia_language(metadata) == language


def test_articles_answer_for_wikipedia_urls_or_zim_urls():
    assert zim_url(WIKIPEDIA, "dump", "A/Berlin") == "https://de.wikipedia.org/wiki/Berlin"
    assert zim_url({}, "gutenberg", "Moby_Dick") == "zim://gutenberg/Moby_Dick"


@pytest.mark.parametrize(
    ("href", "target"),
    [
        ("Guido_van_Rossum", "A/Guido_van_Rossum"),
        ("../B/Image.png#top", "B/Image.png"),
        ("Caf%C3%A9?action=edit", "A/Café"),
        ("Tom &amp; Jerry", "A/Tom & Jerry"),
        ("#section", None),
        ("/absolute", None),
        ("https://example.org/", None),
        ("mailto:someone@example.org", None),
        ("../../outside", None),
    ],
)
def test_a_link_inside_an_article_resolves_against_the_entry_or_leaves(href, target):
    assert zim_target(href, "A/Python") == target


def test_links_are_listed_in_order_and_rewritten_to_the_articles_urls():
    html = "<p><a href='Rust'>Rust</a> and <A HREF=\"Go#x\">Go</A>, <a href='https://go.dev'>site</a></p>"
    assert zim_targets(html, "A/Python") == ["A/Rust", "A/Go"]
    rewritten = absolute_links(html, "A/Python", WIKIPEDIA, "dump")
    assert "href='https://de.wikipedia.org/wiki/Rust'" in rewritten
    assert 'HREF="https://de.wikipedia.org/wiki/Go"' in rewritten
    assert "href='https://go.dev'" in rewritten


def test_a_file_that_is_no_zim_says_where_to_get_one(tmp_path):
    (tmp_path / "broken.zim").write_bytes(b"not a zim")
    with pytest.raises(ToolFailure, match="not a readable ZIM file.*Kiwix"):
        open_zim(tmp_path / "broken.zim")
