"""Tests of the one tokenizer (mnemon_langgraph.search._text)."""

from __future__ import annotations

import unicodedata

import mnemon_langgraph.search._text as text


def test_words_are_unicode_aware() -> None:
    question = "When did Renée move to Zürich with Søren?"
    assert text.words(question) == [
        "When", "did", "Renée", "move", "to", "Zürich", "with", "Søren",
    ]  # fmt: skip
    # a decomposed accent (u + U+0308) is normalised, not a word break
    decomposed = unicodedata.normalize("NFD", "Zürich")
    assert len(decomposed) == 7 and text.words(decomposed) == ["Zürich"]
    assert text.words("東京 2023 self-care don't") == ["東京", "2023", "self-care", "don't"]


def test_fold_and_possessives() -> None:
    assert text.fold("Søren’s") == "søren"
    assert text.fold("STRASSE'S") == "strasse"
    assert text.fold("Straße") == "strasse"  # full case folding
    assert text.drop_possessive("Caroline's") == "Caroline"
    assert text.drop_possessive("is") == "is"


def test_content_words_keep_names_and_drop_stopwords() -> None:
    question = "When did Renée move to Zürich with Søren's sister?"
    assert text.content_words(question) == ["Renée", "move", "Zürich", "Søren", "sister"]
    assert text.content_words("the the THE and") == []
    assert text.content_words("Dog dog DOG cat") == ["Dog", "cat"]  # first spelling kept


def test_capitalised_words() -> None:
    found = text.capitalised_words("I met Renée in Zürich; Søren's dog and Έλενα came too.")
    assert found == ["Renée", "Zürich", "Søren", "Έλενα"]
    assert text.capitalised_words("When did we go?", stop={"when"}) == []


def test_terms_stem_and_drop_stopwords() -> None:
    assert text.terms("The Dog's SOCKS, and I were hiking in Rotterdam in 2023!") == [
        "dog", "sock", "hik", "rotterdam", "2023",
    ]  # fmt: skip
    assert text.terms("Renée moved to Zürich") == ["renée", "mov", "zürich"]
    assert text.terms("") == []
    assert text.terms("a 7 b") == ["7"]  # numbers kept, one-letter words dropped


def test_light_stemmer_rules() -> None:
    cases = {
        "studies": "study",  # -ies -> -y
        "painting": "paint",
        "painted": "paint",
        "boxes": "box",
        "dogs": "dog",
        "wörds": "wörd",  # any script
        "its": "its",  # too short to strip
        "sing": "sing",
        "red": "red",
    }
    assert {word: text.stem(word) for word in cases} == cases
    assert text.tokenizer_id() == f"mnemon-text-{text.TEXT_RULES_VERSION}/light-english-1"


def test_one_month_table() -> None:
    assert text.MONTHS["january"] == 1 and text.MONTHS["sept"] == 9
    assert text.month_number("Dec.") == 12 and text.month_number("MAY") == 5
    assert text.month_number("monday") is None
    assert text.MONTH_PATTERN.split("|") == list(text.MONTH_NAMES)
    assert len(text.MONTH_NAMES) == 12


def test_pieces_split_at_apostrophes_hyphens_and_underscores() -> None:
    assert text.pieces("Caroline's self-care snake_case Ünï") == [
        "caroline", "s", "self", "care", "snake", "case", "ünï",
    ]  # fmt: skip
