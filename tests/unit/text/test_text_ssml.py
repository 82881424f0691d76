"""SSML: each element's effect on what the model gets, the marks for the audio side, hostile documents."""

import json

import pytest

from qwen3tts.cli import main
from qwen3tts.errors import RequestError
from qwen3tts.text import Lexicon, prepare
from qwen3tts.text.ssml import SSMLError, parser
from qwen3tts.text.ssml.limits import MAX_BREAKS, MAX_DEPTH, MAX_ELEMENTS


def said(document: str, language: str = "en", **options) -> list[str]:
    return [piece.normalized for piece in prepare(document, language, **options).pieces]


def test_plain_text_and_the_same_text_in_speak_read_the_same():
    text = "The 14:05 to St. Albans leaves from platform 3. Tickets cost £4.20."
    plain, ssml = prepare(text, "en"), prepare(f"<speak>{text}</speak>", "en")
    assert [p.normalized for p in ssml.pieces] == [p.normalized for p in plain.pieces]
    assert ssml.ssml and not plain.ssml


def test_a_break_cuts_the_sentence_and_puts_exact_silence_after_the_piece():
    prepared = prepare('<speak>Please wait <break time="750ms"/> then board.</speak>', "en")
    assert [(p.normalized, p.silence_after_ms) for p in prepared.pieces] == [
        ("Please wait", 750),
        ("then board.", 0),
    ]


@pytest.mark.parametrize(
    ("attributes", "milliseconds"),
    [
        ('time="1.5s"', 1500),
        ('strength="strong"', 750),
        ("", 500),
        ('strength="none"', 0),
        ('time="2s" strength="weak"', 2000),
    ],
)
def test_break_time_and_strength(attributes, milliseconds):
    prepared = prepare(f"<speak>Gate closing now. <break {attributes}/>Thank you all.</speak>", "en")
    assert prepared.pieces[0].silence_after_ms == milliseconds


def test_breaks_at_the_edges_become_silence_before_the_first_and_after_the_last_piece():
    prepared = prepare(
        '<speak><break time="300ms"/>Attention please. <break time="200ms"/><break time="100ms"/></speak>',
        "en",
    )
    assert [(p.silence_before_ms, p.silence_after_ms) for p in prepared.pieces] == [(300, 300)]
    only = prepare('<speak><break time="400ms"/></speak>', "en").pieces
    assert [(p.normalized, p.silence_before_ms) for p in only] == [("", 400)]


def test_paragraphs_and_sentences_are_pieces_of_their_own():
    document = "<speak><p><s>Gate B12</s><s>is now closed</s></p><p>Thank you for waiting.</p></speak>"
    assert said(document) == ["Gate B one two", "is now closed", "Thank you for waiting."]


@pytest.mark.parametrize(
    ("kind", "content", "expected"),
    [
        ("characters", "B12", "B one two"),
        ("spell-out", "gate", "G A T E"),
        ("digits", "578", "five seven eight"),
        ("cardinal", "578", "five hundred and seventy-eight"),
        ("cardinal", "-3", "minus three"),
        ("ordinal", "3", "third"),
        ("time", "14:05", "fourteen oh five"),
        ("telephone", "+44 20 7946", "plus four four, two zero, seven nine four six"),
    ],
)
def test_say_as_reads_its_text_as_the_named_kind(kind, content, expected):
    document = f'<speak>Read <say-as interpret-as="{kind}">{content}</say-as> now.</speak>'
    assert said(document) == [f"Read {expected} now."]


@pytest.mark.parametrize(
    ("format_", "content", "expected"),
    [
        ("dmy", "05/06/2025", "the fifth of June twenty twenty-five"),
        ("mdy", "06/05/2025", "June fifth twenty twenty-five"),
        ("ymd", "2025-06-05", "the fifth of June twenty twenty-five"),
        ("dm", "5.6", "the fifth of June"),
        ("y", "1998", "nineteen ninety-eight"),
    ],
)
def test_say_as_date_follows_its_format(format_, content, expected):
    document = f'<speak>On <say-as interpret-as="date" format="{format_}">{content}</say-as> only.</speak>'
    assert said(document) == [f"On {expected} only."]


def test_say_as_in_chinese_and_german():
    assert said('<speak>登机口<say-as interpret-as="characters">B12</say-as>。</speak>', "zh") == [
        "登机口B 一 二。"
    ]
    assert said('<speak>Gleis <say-as interpret-as="ordinal">3</say-as>.</speak>', "de") == ["Gleis dritte."]
    assert said('<speak>热线<say-as interpret-as="telephone">110</say-as>。</speak>', "zh") == [
        "热线幺幺零。"
    ]


def test_what_say_as_and_sub_produce_is_not_read_again_by_the_lexicon_or_the_normaliser():
    lexicon = Lexicon.from_dict({"words": {"B": "bee", "W3C": "dubya three see"}})
    document = (
        '<speak>B <say-as interpret-as="characters">B2</say-as> '
        '<sub alias="World 3 Web">W3C</sub> W3C.</speak>'
    )
    assert said(document, lexicon=lexicon) == ["bee B two World 3 Web dubya three see."]


def test_sub_says_its_alias_instead_of_its_text():
    assert said('<speak>Ask the <sub alias="World Wide Web Consortium">W3C</sub> today.</speak>') == [
        "Ask the World Wide Web Consortium today."
    ]


def test_lang_changes_the_language_of_its_piece_and_how_it_is_normalised():
    prepared = prepare(
        '<speak>The train. <lang xml:lang="de-DE">Der Zug um 14:05 Uhr.</lang> At 14:05.</speak>', "en"
    )
    assert [(p.normalized, p.language) for p in prepared.pieces] == [
        ("The train.", None),
        ("Der Zug um vierzehn Uhr fünf.", "german"),
        ("At fourteen oh five.", None),
    ]


def test_speak_xml_lang_sets_the_language_of_every_piece():
    prepared = prepare('<speak xml:lang="de">Um 14:05 Uhr.</speak>', "auto")
    assert [(p.normalized, p.language) for p in prepared.pieces] == [("Um vierzehn Uhr fünf.", "german")]


def test_prosody_rate_marks_its_pieces_and_nests_as_a_product():
    document = (
        '<speak><prosody rate="slow">Slow words. <prosody rate="+20%">Less slow.</prosody></prosody>'
        " Normal.</speak>"
    )
    assert [(p.normalized, p.rate) for p in prepare(document, "en").pieces] == [
        ("Slow words.", 0.75),
        ("Less slow.", 0.9),
        ("Normal.", 1.0),
    ]


def test_emphasis_marks_the_piece_without_cutting_it():
    prepared = prepare('<speak>This is <emphasis level="strong">really</emphasis> important.</speak>', "en")
    assert [(p.normalized, p.emphasis) for p in prepared.pieces] == [("This is really important.", "strong")]


def test_voice_marks_its_pieces():
    prepared = prepare('<speak>Hello. <voice name="anna">I am Anna.</voice> Bye now.</speak>', "en")
    assert [(p.normalized, p.voice) for p in prepared.pieces] == [
        ("Hello.", None),
        ("I am Anna.", "anna"),
        ("Bye now.", None),
    ]


def test_audio_names_a_configured_chime_and_its_fallback_text_is_not_said():
    prepared = prepare(
        '<speak><audio src="gong">ding dong</audio>Attention please.</speak>', "en", chimes={"gong"}
    )
    assert [(p.normalized, p.chime) for p in prepared.pieces] == [("", "gong"), ("Attention please.", None)]


@pytest.mark.parametrize(
    ("document", "reason"),
    [
        ('<speak><audio src="/etc/passwd"/></speak>', "never a path or URL"),
        ('<speak><audio src="http://x/a.wav"/></speak>', "never a path or URL"),
        ('<speak><audio src="bell"/></speak>', "not a configured chime (known: gong)"),
        ('<speak><break time="5 parsecs"/></speak>', "break time '5 parsecs'"),
        ('<speak><break time="11s"/></speak>', "at most 10000 ms"),
        ('<speak><break strength="huge"/></speak>', "break strength 'huge'"),
        ('<speak><say-as interpret-as="currency">5</say-as></speak>', "interpret-as='currency'"),
        ('<speak><say-as interpret-as="cardinal">five</say-as></speak>', "is not a number"),
        ('<speak><say-as interpret-as="date" format="dmy">31/13/2025</say-as></speak>', "no month 13"),
        ('<speak><say-as interpret-as="digits"><b>1</b></say-as></speak>', "holds text only"),
        ("<speak><sub>W3C</sub></speak>", "needs an alias"),
        ('<speak><lang xml:lang="tlh">Qapla</lang></speak>', "unknown language 'tlh'"),
        ("<speak><lang>x</lang></speak>", "needs xml:lang"),
        ('<speak><prosody rate="300%">fast</prosody></speak>', "outside 0.5 to 2"),
        ('<speak><prosody rate="warp">fast</prosody></speak>', "prosody rate 'warp'"),
        ('<speak><emphasis level="loud">x</emphasis></speak>', "emphasis level 'loud'"),
        ('<speak><voice name="../anna">x</voice></speak>', "voice name"),
        ("<speak>unclosed", "no element found"),
        ("<speak><p>bad</speak>", "mismatched tag"),
        ("<notspeak>x</notspeak>", "root element must be <speak>"),
        ("<speak><speak>x</speak></speak>", "<speak> inside <speak>"),
    ],
)
def test_invalid_markup_is_one_error_with_the_reason_and_the_position(document, reason):
    with pytest.raises(SSMLError) as error:
        prepare(document, "en", chimes={"gong"}, ssml=True)
    message = str(error.value)
    assert isinstance(error.value, RequestError)
    assert reason in message and "line 1, column" in message, message


def test_the_position_of_an_error_is_its_line_and_column():
    with pytest.raises(SSMLError, match="line 3, column 3"):
        prepare('<speak>\nFine.\n  <break time="x"/></speak>', "en")


def test_unknown_elements_and_attributes_are_ignored_with_a_warning_and_their_text_is_read():
    prepared = prepare(
        '<speak>Go <foo bar="1">to gate 3</foo> <prosody pitch="high">now</prosody>.</speak>', "en"
    )
    assert [p.normalized for p in prepared.pieces] == ["Go to gate three now."]
    assert any("<foo> is not supported" in w for w in prepared.warnings)
    assert any("prosody pitch is not supported" in w for w in prepared.warnings)


def test_marks_and_metadata_say_nothing_and_warn_nothing():
    prepared = prepare('<speak><meta name="a" content="b"/>Gate <mark name="m1"/>closes.</speak>', "en")
    assert [p.normalized for p in prepared.pieces] == ["Gate closes."] and prepared.warnings == ()


def test_a_text_starting_with_speak_is_ssml_unless_told_otherwise():
    assert prepare("  <speak>Hi there you.</speak>", "en").ssml
    plain = prepare("<speak>Hi there you.</speak>", "en", ssml=False)
    assert not plain.ssml and plain.pieces[0].normalized == "<speak>Hi there you.</speak>"
    assert prepare("Hi there, <b>you</b>.", "en").ssml is False


BILLION_LAUGHS = (
    '<?xml version="1.0"?><!DOCTYPE lolz [<!ENTITY lol "lol">'
    + "".join(
        f'<!ENTITY lol{i} "{("&lol" + str(i - 1) + ";") * 10 if i > 1 else "&lol;" * 10}">'
        for i in range(1, 10)
    )
    + "]><speak>&lol9;</speak>"
)
# document, the refusal's reason, the most start tags the parser may read before it refuses (bounded by our
# limits, not by the document: a size, a DTD or entities are refused before the first one)
HOSTILE = {
    "billion laughs": (BILLION_LAUGHS, "DOCTYPE is not allowed", 0),
    "external entity": (
        '<!DOCTYPE speak [<!ENTITY x SYSTEM "file:///etc/passwd">]><speak>&x;</speak>',
        "DOCTYPE",
        0,
    ),
    "10,000 nested elements": (
        "<speak>" + "<s>" * 10_000 + "x" + "</s>" * 10_000 + "</speak>",
        "at most 20000",
        0,
    ),
    "2,000 breaks": ("<speak>" + '<break time="1ms"/>' * 2000 + "</speak>", "at most 20000", 0),
    "10,000 elements": ("<speak>" + "<mark/>" * 10_000 + "</speak>", "at most 20000", 0),
    # the same within the size bound: the element bounds refuse them at the first element past
    "100 nested elements": (
        "<speak>" + "<s>" * 100 + "x" + "</s>" * 100 + "</speak>",
        f"deeper than {MAX_DEPTH}",
        1 + MAX_DEPTH,
    ),
    "200 breaks": (
        "<speak>" + "<break/>" * 200 + "</speak>",
        f"more than {MAX_BREAKS} breaks",
        2 + MAX_BREAKS,
    ),
    "1,500 elements": (
        "<speak>" + "<mark/>" * 1500 + "</speak>",
        "more than 1000 elements",
        1 + MAX_ELEMENTS,
    ),
    "a minute of silence": (
        "<speak>" + '<break time="10s"/>a ' * 7 + "</speak>",
        "of breaks in one document",
        8,
    ),
}


@pytest.mark.parametrize("name", sorted(HOSTILE))
def test_a_hostile_document_is_refused_before_the_parser_reads_past_a_bound(name, monkeypatch):
    """Work bounded by the limits, whatever the document holds (counted in start tags, not timed: a
    loaded machine's clock says nothing about how far the parser read)."""
    document, reason, most = HOSTILE[name]
    read = []
    start_element = parser._Handler.startElement
    monkeypatch.setattr(parser._Handler, "startElement", lambda self, tag, attrs: (
        read.append(tag), start_element(self, tag, attrs))[1])  # fmt: skip
    with pytest.raises(SSMLError, match=reason):
        prepare(document, "en")
    assert len(read) <= most, f"read {len(read)} start tags of a document refused at {most}"


def test_the_text_command_shows_what_ssml_becomes(capsys):
    document = (
        '<speak><audio src="gong"/>Gate <say-as interpret-as="characters">B12</say-as>. '
        '<break time="750ms"/><foo/>Bye.</speak>'
    )
    assert main(["text", "--json", "--language", "en", document]) == 0
    out = json.loads(capsys.readouterr().out)
    assert out["ssml"] is True
    assert out["pieces"] == [
        {"text": "", "normalized": "", "chime": "gong"},
        {"text": "Gate B one two.", "normalized": "Gate B one two.", "silence_after_ms": 750},
        {"text": "Bye.", "normalized": "Bye."},
    ]
    assert len(out["warnings"]) == 1 and "<foo>" in out["warnings"][0]
    assert main(["text", "--language", "en", "--no-ssml", "<speak>Hi there you.</speak>"]) == 0
    assert "normalized: <speak>Hi there you.</speak>" in capsys.readouterr().out


def test_the_text_command_reports_invalid_ssml_as_an_error(capsys):
    assert main(["text", "--ssml", "--language", "en", "<speak><break time='x'/></speak>"]) != 0
    assert "break time 'x'" in capsys.readouterr().err
