"""The summary's language: the tags it accepts, and which language a transcript is found to be in."""

from __future__ import annotations

import pytest

from application.meetings.language import (
    AUTO,
    SAMPLE_CHARS,
    language_name,
    languages_differ,
    summary_language,
    transcript_language,
)


@pytest.mark.parametrize("tag", ["fr", "pt-BR", "zh-Hant", "de-CH", "AUTO", " auto "])
def test_auto_and_bcp_47_tags_are_accepted(tag: str) -> None:
    assert summary_language(tag) in {tag.strip(), AUTO}


@pytest.mark.parametrize("tag", ["", "french!", "f", "en_US", "toolonglanguage", "fr-"])
def test_anything_else_is_refused_naming_what_arrived(tag: str) -> None:
    with pytest.raises(ValueError, match="BCP 47") as caught:
        summary_language(tag)
    assert repr(tag) in str(caught.value)


@pytest.mark.parametrize(
    ("lines", "language"),
    [
        (["Ana: I'll send the deck by Friday.", "Ben: We decided to ship it."], "en"),
        (["Ana: Je vais envoyer le document pour vendredi.", "Ben: Nous avons décidé."], "fr"),
        (["Ana: Ich werde die Folien bis Freitag schicken.", "Ben: Wir haben das beschlossen."], "de"),
        (["アナ: 金曜日までに資料を送ります。", "ベン: 出荷することに決定しました。"], "ja"),
        (["[00:01] Ana: 42", "Ben: ..."], None),
    ],
)
def test_a_transcript_is_found_in_its_language_from_what_its_speakers_say(
    lines: list[str], language: str | None
) -> None:
    assert transcript_language(lines) == language


def test_items_are_across_languages_only_for_a_tag_that_is_not_the_transcripts() -> None:
    english = ["Ana: I'll send the deck by Friday."]
    assert not languages_differ(AUTO, english)
    assert not languages_differ("en-GB", english)
    assert languages_differ("fr", english)
    # A transcript whose language cannot be told: the items carry quotes.
    assert languages_differ("en", ["Ana: 42"])
    assert language_name("fr-CA") == "French (fr-CA)"
    assert language_name("tlh") == "tlh"


def test_only_the_first_sample_of_a_long_transcript_is_read_for_its_language() -> None:
    english = ["Ana: I'll send the deck and the notes to the team."] * (SAMPLE_CHARS // 40)
    german = ["Ben: Ich werde die Folien und die Notizen an das Team schicken."] * (SAMPLE_CHARS // 10)
    assert transcript_language(english + german) == "en"
    assert transcript_language(german + english) == "de"
