"""The lesson pane's Markdown parser (`batchtui.widgets.lesson.lesson_parser`) is Textual's
("gfm-like") without linkify: no lesson text has a bare address for linkify to make a link of, so
every text parses alike, and the first frame skips compiling linkify's pattern (6-8 ms of CPU)."""

from __future__ import annotations

from markdown_it import MarkdownIt

import steps
from batchtui.widgets.lesson import LessonMarkdown, lesson_parser


def _tokens(parser: MarkdownIt, text: str) -> list:
    return [(t.type, t.tag, t.content, t.attrs, [(c.type, c.content, c.attrs, c.markup) for c in t.children or []])
            for t in parser.parse(text)]


def _lesson_texts() -> list[str]:
    """Every Markdown text a step shows (its figures as drafted: numbers are never addresses)."""
    lessons = steps.open_lessons()
    texts = []
    for index in range(len(lessons.summaries)):
        step = lessons.draft(index)
        texts += [step.body_md, step.reveal_md, *step.hints]
        texts += [value for value in step.activity.params.values() if isinstance(value, str)]
    return texts


def test_every_lesson_text_parses_as_textuals_parser_parses_it():
    textuals = MarkdownIt("gfm-like")
    texts = _lesson_texts()
    assert len(texts) > 60
    assert [t for t in texts if _tokens(lesson_parser(), t) != _tokens(textuals, t)] == []
    # (a bare address is where the two differ: this check would catch one)
    assert _tokens(lesson_parser(), "see docs.vllm.ai") != _tokens(textuals, "see docs.vllm.ai")


def test_the_lesson_pane_parses_with_it():
    assert LessonMarkdown()._parser_factory is lesson_parser  # (Textual's hook for a parser)
