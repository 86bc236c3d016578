"""Turning what users and models type into a safe, ranked full-text query.

"which port did we move the API to?" must find "the API moved to port 8443".
Plain FTS syntax would AND every word (including "which" and "did") and find
nothing, and a stray quote or ``NEAR`` would be a syntax error. So:

* quoted ``"phrases"`` are kept as required phrases;
* other words lose stop words and become an OR of terms (see ``ranking``);
* words with inner punctuation (``db-staging-7.internal``) become phrases, but a
  possessive ``'s`` is dropped (``Jonas's`` is ``Jonas``); such a phrase also carries
  its pieces as typed (``Term.typed``: PostgreSQL indexes a path or a host name as one
  lexeme, never as the phrase of its words);
* CJK words become phrases of the bigrams the store indexes;
* the result is backend-neutral (:class:`~mnesis.store.search_query.SearchQuery`): each
  backend quotes every term, so no user input can form an operator.
"""

from __future__ import annotations

import re
from dataclasses import dataclass, field

from mnesis.store.search_query import SearchQuery, Term
from mnesis.store.search_text import cjk_bigrams

__all__ = ["ParsedQuery", "parse_query"]

_STOP_WORDS = frozenset(
    """a about above after again all am an and any are as at be been before being below
    between both but by can could did do does doing down during each few for from further
    had has have having he her here hers him his how i if in into is it its itself just
    me more most my no nor not now of off on once only or other our ours out over own same
    she should so some such than that the their them then there these they this those
    through to too under until up very was we were what when where which while who whom
    why will with would you your yours""".split()
)
# Porter stemming maps "moved" to "move" but not "chose" to "choose": irregular forms
# of verbs common in agent conversations are expanded explicitly.
_IRREGULAR = [
    "choose chose chosen",
    "go went gone",
    "make made",
    "take took taken",
    "write wrote written",
    "find found",
    "run ran",
    "break broke broken",
    "give gave given",
    "get got gotten",
    "begin began begun",
    "build built",
    "buy bought",
    "catch caught",
    "do did done",
    "forget forgot forgotten",
    "hold held",
    "keep kept",
    "leave left",
    "lose lost",
    "mean meant",
    "pay paid",
    "say said",
    "see saw seen",
    "send sent",
    "show showed shown",
    "speak spoke spoken",
    "spend spent",
    "stand stood",
    "teach taught",
    "tell told",
    "think thought",
    "understand understood",
    "win won",
    "rise rose risen",
    "drive drove driven",
    "fall fell fallen",
    "feel felt",
    "fight fought",
    "fly flew flown",
    "grow grew grown",
    "hide hid hidden",
    "know knew known",
    "lead led",
    "ride rode ridden",
    "seek sought",
    "shake shook shaken",
    "sing sang sung",
    "steal stole stolen",
    "strike struck",
    "swear swore sworn",
    "throw threw thrown",
    "wake woke woken",
    "wear wore worn",
]
# Abbreviations and their long forms, matched either way (query-side: the index keeps
# the words as written).
_SYNONYMS = [
    "db database databases",
    "config configuration configurations",
    "prod production",
    "repo repository repositories",
    "env environment environments",
    "auth authentication",
    "deps dependencies",
    "dep dependency",
    "pw pwd password passwords",
    "k8s kubernetes",
    "dir directory directories",
    "docs documentation",
    "perf performance",
    "creds credentials",
    "max maximum",
    "min minimum",
    "param parameter params parameters",
    "arg argument args arguments",
    "req request",
    "resp response",
    "pkg package",
    "lib library",
    "msg message",
    "tmp temp temporary",
    "ms milliseconds",
    "secs seconds",
    "mins minutes",
]
_FORMS: dict[str, tuple[str, ...]] = {
    form: tuple(group.split()) for group in _IRREGULAR + _SYNONYMS for form in group.split()
}
# Words that ask for the latest state ("which port does the API use now?"): the newer
# of two statements of the same fact ranks first.
_LATEST = frozenset(
    "now current currently latest newest nowadays anymore today still recently updated".split()
)
_PHRASE_RE = re.compile(r'"([^"]*)"')
_POSSESSIVE_RE = re.compile(r"(?<=\w)['\u2019]s$", re.IGNORECASE)
_WORD_RE = re.compile(r"\w+", re.UNICODE)
_EDGES = ".,;:!?()[]{}<>'`*\""
"""Punctuation around a typed piece that is not part of it."""
_CJK_RE = re.compile(r"[\u3040-\u30ff\u3400-\u4dbf\u4e00-\u9fff\uac00-\ud7af\uf900-\ufaff]")


@dataclass(slots=True)
class ParsedQuery:
    """A parsed user query, in backend-neutral terms."""

    required: list[Term] = field(default_factory=list)
    """Phrases that must all match."""
    optional: list[Term] = field(default_factory=list)
    """Terms of which any may match."""
    highlights: list[str] = field(default_factory=list)
    """Plain strings to look for when cutting a snippet."""
    latest: bool = False
    """The question asks for the latest state ("now", "currently", "these days")."""
    exact: list[str] = field(default_factory=list)
    """The quoted phrases as typed: a hit holding one whole (not inside a longer
    identifier or path) ranks above a hit that only holds its words (see ``ranking``)."""

    @property
    def tiers(self) -> list[SearchQuery]:
        """Disjoint queries, best first: documents with every word, then documents with
        some of them. Each tier is ranked by the backend on its own.

        Ranking all-words matches first is the classic coordination boost, and it lets
        a question made of common words be answered from the (small) intersection
        without scoring every document that contains any one of the words.
        """
        if not self.required and not self.optional:
            return []
        required, optional = tuple(self.required), tuple(self.optional)
        if len(optional) < 2:
            return [SearchQuery(all_of=required, any_of=optional)]
        return [
            SearchQuery(all_of=required + optional),
            SearchQuery(all_of=required, any_of=optional, not_all_of=optional),
        ]


def _phrase_for(chunk: str) -> Term | None:
    if _CJK_RE.search(chunk):
        grams = cjk_bigrams(chunk)
        words = [w.lower() for w in _WORD_RE.findall(_CJK_RE.sub(" ", chunk))]
        pieces = grams + words
        return Term((tuple(pieces),)) if pieces else None
    words = [w.lower() for w in _WORD_RE.findall(chunk)]
    if not words:
        return None
    pieces = [p.strip(_EDGES).lower() for p in chunk.split()]
    pieces = [p for p in pieces if p]
    typed = tuple(pieces) if any(not _WORD_RE.fullmatch(p) for p in pieces) else ()
    return Term((tuple(words),), typed)


def parse_query(text: str) -> ParsedQuery:
    """Parse ``text`` into required phrases and optional ranked terms."""
    parsed = ParsedQuery()
    words = [w.lower() for w in _WORD_RE.findall(text)]
    parsed.latest = bool(_LATEST.intersection(words)) or "these days" in " ".join(words)
    for phrase in _PHRASE_RE.findall(text):
        quoted = _phrase_for(phrase)
        if quoted:
            parsed.required.append(quoted)
            parsed.highlights.append(phrase.strip())
            parsed.exact.append(" ".join(phrase.split()))
    rest = _PHRASE_RE.sub(" ", text).replace('"', " ")
    terms: dict[Term, None] = {}
    stop_only: dict[Term, None] = {}
    for chunk in rest.split():
        # A possessive is the word itself: "Jonas's dog" is about "Jonas".
        core = _POSSESSIVE_RE.sub("", chunk.strip(".,;:!?()[]{}<>'`*"))
        if not core:
            continue
        if _CJK_RE.search(core) or len(_WORD_RE.findall(core)) > 1:
            quoted = _phrase_for(core)
            if quoted:
                terms.setdefault(quoted, None)
                parsed.highlights.append(core)
            continue
        word = core.lower()
        if not _WORD_RE.fullmatch(word):
            continue
        target = stop_only if word in _STOP_WORDS else terms
        forms = _FORMS.get(word)
        if forms and target is terms:
            target.setdefault(Term(tuple((f,) for f in forms)), None)
        else:
            target.setdefault(Term.word(word), None)
        if target is terms:
            parsed.highlights.extend(forms or (word,))
    if not terms and not parsed.required:
        terms = stop_only
        parsed.highlights.extend(t.alternatives[0][0] for t in stop_only)
    parsed.optional = list(terms)
    return parsed
