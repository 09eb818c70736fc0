"""Request and response bodies of the HTTP API (pydantic), which also make up the OpenAPI schema."""

from __future__ import annotations

from typing import Annotated, Any, Literal

from pydantic import BaseModel, BeforeValidator, ConfigDict, Field, StrictBool, StrictInt, StrictStr

from dtdialog.understanding.intents import MAX_TURN_CHARS
from index.base import ID_REGEX
from parsers.text_input import MAX_CHARS, VISIBLE_TEXT_PATTERN

#: Hard upper bound of hits per search request, whatever the settings say.
MAX_SEARCH_SIZE = 50




def _whole_number(value: Any) -> Any:
    # JSON has one number type: 21.0 is the integer 21 to JSON Schema (and to any client that serialises floats)
    return int(value) if isinstance(value, float) and value.is_integer() else value


#: A request integer: a JSON number without a fraction (``21`` or ``21.0``); never a bool or a string.
JsonInt = Annotated[StrictInt, BeforeValidator(_whole_number)]
#: What the schema says of every text the API cleans (``deps.check_text``): at least one character that is not
#: whitespace, a control or a format character; the server refuses any other with 422 ``invalid_input``.
VISIBLE_TEXT = {"pattern": VISIBLE_TEXT_PATTERN}


class _Strict(BaseModel):
    # Unknown fields are a client bug worth a clear 422 rather than silence. Request fields use the Strict*
    # types: ``{"position": false}`` or ``"1"`` silently became 0 and 1, a different answer slot than meant.
    model_config = ConfigDict(extra="forbid")


class ErrorInfo(BaseModel):
    code: str = Field(description="Stable machine-readable code, e.g. 'session_not_found'.")
    message: str = Field(description="One line for a human.")
    error_id: str | None = Field(default=None, description="Set on 500s; the same id is in the server log.")
    details: list[dict[str, Any]] | None = None


class ErrorResponse(BaseModel):
    error: ErrorInfo


class ParseRequest(_Strict):
    text: StrictStr = Field(min_length=1, json_schema_extra=VISIBLE_TEXT,
                            description="The text to parse; at most the server's max_text_chars (default "
                                        f"{MAX_CHARS:,} characters, the parser's limit) with the API key, a turn's "
                                        f"{MAX_TURN_CHARS:,} without it (413 above it).",
                            examples=["I reset my password, but I still cannot log in."])


class ParseResponse(BaseModel):
    parser: str
    tree: dict[str, Any] = Field(description="DiscourseTree.to_dict() (schema 2): text, edus, and nodes - a flat "
                                             "list, the root first, each inner node naming its children by position.")
    compact: str = Field(description="One-line bracketed form, e.g. 'Contrast(N: ..., S: ...)'.")
    relations: list[str]
    edus: list[str]
    svg: str | None = Field(default=None, description="The tree as an SVG picture when ?svg=true.")


class SearchRequest(_Strict):
    query: StrictStr = Field(min_length=1, json_schema_extra=VISIBLE_TEXT,
                             description="A customer question, at most a customer message's "
                                         f"{MAX_TURN_CHARS:,} characters (413 above it), or a query string in 'query' "
                                         "mode (the general text limit, max_text_chars).",
                             examples=["I cannot log in although I reset my password."])
    size: JsonInt = Field(default=10, ge=1, le=MAX_SEARCH_SIZE)
    mode: Literal["question", "query"] = Field(
        default="question",
        description="'question': parse the text, retrieve and rank by rhetorical agreement with its DT. "
                    "'query': a query string such as 'Contrast [reset password] login', retrieval only.")


class Agreement(BaseModel):
    verdict: bool = Field(description="True when the answer's DT addresses the question's non-default relations.")
    score: float
    addressed: int | None = None
    required: int | None = None
    chains: list[str] = Field(default_factory=list,
                              description="Matched pairs, e.g. 'Contrast[replaced battery] -> Condition[no fuel pressure]'.")
    missing: list[str] = Field(default_factory=list, description="Question relations no answer relation addressed.")


class SearchHitOut(BaseModel):
    id: str
    dialogue_id: str
    position: int
    text: str
    score: float
    retrieval_score: float | None = None
    matched: dict[str, list[str]] = Field(default_factory=dict, description="Index field -> the terms that matched.")
    relations: list[str] = Field(default_factory=list)
    agreement: Agreement | None = None
    features: dict[str, Any] | None = None


class SearchResponse(BaseModel):
    query: str
    mode: str
    parsed_query: dict[str, Any] | None = Field(default=None, description="The SearchQuery sent to the index.")
    question_tree: dict[str, Any] | None = None
    question_compact: str | None = None
    requirements: list[str] = Field(default_factory=list,
                                    description="The question relations an answer must address, 'Relation[words]'.")
    rejected: int = Field(default=0, description="Retrieved candidates dropped for lack of rhetorical agreement.")
    hits: list[SearchHitOut]


class SessionCreated(BaseModel):
    session_id: str
    token: str = Field(description="The session's secret: send it as `X-Session-Token` on every request about this "
                                   "session. It is shown only here; the server keeps only its digest.")


class MessageRequest(_Strict):
    text: StrictStr = Field(min_length=1, json_schema_extra=VISIBLE_TEXT,
                            description="The customer's turn: a question, a follow-up or an option number; at most "
                                        f"{MAX_TURN_CHARS:,} characters, the engine's turn limit (413 above it).",
                            examples=["I have reset my password, cleared the browser cache and tried another browser, but I "
                                "still cannot log in."])


class RestWebhookRequest(BaseModel):
    """Rasa's REST channel body. Other fields (Rasa's ``metadata``, a widget's own) are accepted and ignored, so
    existing widgets work unchanged."""

    sender: StrictStr = Field(min_length=1, max_length=128, pattern=r"\S",
                              description="The conversation's key, chosen by the client: its first message starts a "
                                          "session, later ones continue it (until it expires after the session TTL).",
                              examples=["customer-42"])
    message: StrictStr = Field(min_length=1, json_schema_extra=VISIBLE_TEXT,
                               description="The customer's turn, as `text` of POST /sessions/{id}/messages (an "
                                           "option number picks a button).",
                               examples=["My car does not start although I replaced the battery."])


class RestButton(BaseModel):
    title: str = Field(description="The option's label.")
    payload: str = Field(description="Send it back as the next `message` to pick the option (its number).")


class RestMessage(BaseModel):
    recipient_id: str = Field(description="The request's `sender`.")
    text: str = Field(description="The bot's reply.")
    buttons: list[RestButton] | None = Field(default=None, description="Clarification options; absent when none.")
    custom: dict[str, Any] = Field(default_factory=dict,
                                   description="What the engine decided: `kind`, `state`, `answer_id`, `confidence`, "
                                   "and `why`: the customer's plain reason for an answer (null otherwise).")


class TurnOption(BaseModel):
    number: int
    label: str
    answer_id: str | None = None


class Explanation(BaseModel):
    """What the chat page's explain panel draws: both trees and the chains that matched."""

    question: str | None = None
    question_tree: dict[str, Any] | None = None
    question_svg: str | None = None
    answer_id: str | None = None
    answer: str | None = None
    answer_tree: dict[str, Any] | None = None
    answer_svg: str | None = None
    verdict: bool | None = Field(default=None, description="Whether the delivered answer's DT agrees with the "
                                 "question's; null when no answer was delivered in this turn.")
    agreement_score: float | None = None
    chains: list[str] = Field(default_factory=list, description="'Q relation[words] -> A relation[words]' pairs.")
    missing: list[str] = Field(default_factory=list)
    chains_svg: str | None = Field(default=None, description="The chains as a picture: Q boxes -> A boxes "
                                   "(null when no answer was delivered: there is no answer to match).")
    summary: list[str] = Field(default_factory=list, description="Why this reply, in plain sentences: the part of "
                               "the question the answer addresses, what the customer already tried, the confidence "
                               "and the closest alternatives with why they lost.")
    details: list[str] = Field(default_factory=list, description="The delivered answer's ranker features, labelled "
                               "('label (feature) +contribution'); empty when no answer was delivered.")


class TurnResponse(BaseModel):
    session_id: str
    reply: str
    kind: str = Field(description="What the reply is: an answer, a clarification request, a handoff, ...")
    options: list[TurnOption] = Field(default_factory=list)
    state: str
    answer_id: str | None = None
    why: str | None = Field(default=None, description=(
        "Why this answer, for the customer: the part of their message it takes up, in their own words, and what it "
        "leaves out because they already did it. No ids or scores; null for replies that are not answers."))
    trace: dict[str, Any] = Field(default_factory=dict)
    explain: Explanation | None = Field(default=None, description="Only with ?explain=true.")
    # calibrated confidence
    confidence: float | None = Field(default=None, ge=0.0, le=1.0, description=(
        "Calibrated probability that the answer is right (answers, and abstentions: how unsure the engine was); "
        "null for other replies or an engine without a calibrator."))


class SessionOut(BaseModel):
    model_config = ConfigDict(extra="allow")

    session_id: str
    transcript: list[dict[str, Any]] = Field(default_factory=list)
    traces: list[dict[str, Any]] = Field(default_factory=list)


class ProfileResponse(BaseModel):
    """The wording of the served bot (its domain profile): what the chat page shows before the first turn."""

    name: str = Field(description="what the bot calls itself")
    domain: str = Field(description="the domain of the questions it answers")
    title: str = Field(description="the chat page's title and heading")
    greeting: str = Field(description="the bot's first message")
    placeholder: str = Field(description="an example question for the message box")
    language: str = Field(description="the customers' language (BCP 47 code)")


class HealthResponse(BaseModel):
    status: Literal["ok"]
    version: str
    engine_loaded: bool
    ready: bool = Field(description="True when a request need not wait for the start-up load: it is done, or the "
                                    "server loads the engine on first use (`dtdialog serve --lazy`).")
    loading: bool = Field(default=False, description="True while the engine loads at start-up (the first "
                                                     "requests wait for it).")
    problem: str | None = Field(default=None, description="Why the start-up load failed (requests then answer 503 "
                                                          "`engine_unavailable` and try again); null again once a "
                                                          "load succeeds, and always null in a `/readyz` 200.")


class IndexStats(BaseModel):
    backend: str
    documents: int
    location: str | None = Field(default=None, description="Index file name (never a full server path).")
    parser: str | None = None


class NewAnswer(_Strict):
    text: StrictStr = Field(min_length=1, json_schema_extra=VISIBLE_TEXT,
                            description=f"The answer; at most the server's max_text_chars (default {MAX_CHARS:,}).")
    id: StrictStr | None = Field(default=None, max_length=200, pattern=ID_REGEX,
                                 description="Defaults to '{dialogue_id}#{position}'. Letters, digits and ._:#/@~- only.")
    dialogue_id: StrictStr | None = Field(default=None, max_length=200, pattern=ID_REGEX,
                                          description="Defaults to 'api-<hash of text>'. Letters, digits and ._:#/@~- only.")
    position: JsonInt = Field(default=1, ge=0, le=10_000)
    question: StrictStr | None = Field(default=None, description="The question this answer replies to, kept in meta "
                                                                 "as plain text (markup is removed); at most "
                                                                 "max_text_chars (413 above it, never cut).")


class AddDocumentsRequest(_Strict):
    answers: list[NewAnswer] = Field(min_length=1)


class AddDocumentsResponse(BaseModel):
    added: int
    ids: list[str]
    documents: int
    replaced: list[str] = Field(default_factory=list, description="Ids whose earlier version went to the history "
                                "(GET /index/documents/{id}/history, POST .../restore).")


class RebuildRequest(_Strict):
    # the schema states the rule between the fields: a path with source 'path' (no NUL in it), none otherwise
    model_config = ConfigDict(extra="forbid", json_schema_extra={
        "if": {"properties": {"source": {"const": "path"}}, "required": ["source"]},
        "then": {"properties": {"path": {"type": "string", "minLength": 1, "pattern": "^[^\\u0000]*$"}},
                 "required": ["path"]},
        "else": {"properties": {"path": {"anyOf": [{"type": "null"}, {"const": ""}]}}},
    })

    source: Literal["builtin", "path"] = "builtin"
    path: StrictStr | None = Field(default=None,
                                   description="With source='path': a corpus file under a configured rebuild root.")
    drop_api_answers: StrictBool = Field(default=False, description="Drop the answers added through the API instead "
                                         "of carrying them into the rebuilt index (their last versions stay in the "
                                         "history, so they can be restored).")


class RebuildResponse(BaseModel):
    documents: int
    dialogues: int | None = None
    skipped: int = Field(default=0, description="Answers the parser could not use.")
    seconds: float
    backend: str
    kept_api_answers: int = Field(default=0, description="Answers added through the API, carried into the new index.")
    dropped_api_answers: int = Field(default=0, description="Answers added through the API, dropped on request.")


class AnswerVersionOut(BaseModel):
    version: int | None = Field(description="History version (higher = newer); null for the current answer.")
    replaced_at: str | None = Field(default=None, description="When this version was replaced (UTC, ISO 8601).")
    id: str
    dialogue_id: str
    position: int
    text: str
    source: str | None = Field(default=None, description="'api' for an answer added through the API.")


class AnswerHistory(BaseModel):
    id: str
    current: AnswerVersionOut | None = Field(description="The answer served now; null when it is not in the index.")
    versions: list[AnswerVersionOut] = Field(description="Earlier versions, newest first.")


class RestoreRequest(_Strict):
    # the bound inside, before the validator: outside, pydantic writes it into the schema as "ge", not "minimum"
    version: Annotated[StrictInt, Field(ge=1), BeforeValidator(_whole_number)] | None = Field(
        default=None, description="The history version to bring back (default: the newest earlier version).")


class RestoreResponse(BaseModel):
    id: str
    restored_version: int
    documents: int
