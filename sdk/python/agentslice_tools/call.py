"""One invocation as a tool sees it, with the means to answer it."""

from __future__ import annotations

import threading
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any, Optional, Sequence

from ._post import StatusError

if TYPE_CHECKING:
    from .server import ToolServer


def text_segment(text: str) -> dict[str, Any]:
    """A ``display_as`` segment of type text (for UIs; the model gets the result's text)."""
    return {"type": "text", "content": text}


def diff_segment(path: str, patch: str) -> dict[str, Any]:
    """A ``display_as`` segment of a unified diff of ``path``."""
    return {"type": "diff", "content": {"path": path, "patch": patch}}


def image_segment(data: str, media_type: str) -> dict[str, Any]:
    """A ``display_as`` segment of an image (``data`` is base64)."""
    return {"type": "image", "content": {"data": data, "mediaType": media_type}}


def text_item(text: str) -> dict[str, Any]:
    """A result content item of text."""
    return {"type": "text", "text": text}


def image_item(data: str, media_type: str) -> dict[str, Any]:
    """A result content item of an image (``data`` is base64): the model sees it."""
    return {"type": "image", "data": data, "mediaType": media_type}


@dataclass
class Result:
    """What a handler may return instead of a string: text or content items
    (``content`` wins for the model), display segments for UIs, and
    ``subscription`` when the call starts a subscription."""

    text: Optional[str] = None
    content: Optional[list[dict[str, Any]]] = None
    display_as: Optional[list[dict[str, Any]]] = None
    subscription: bool = False


@dataclass
class Call:
    """An invocation: its fields as the runtime sent them, ``cancelled`` (set
    when the runtime cancels the call, closes its thread, or the server
    stops) and the callbacks. Its methods are safe to use from any thread;
    each POST is retried on 5xx and transport errors, never on 4xx (a 4xx
    raises StatusError: the runtime refused it for good)."""

    operation: str
    arguments: dict[str, Any]
    id: str
    call_id: Optional[str]
    callback_url: str
    group_id: str
    thread_ancestors: list[str] = field(default_factory=list)
    user_id: Optional[str] = None
    cancelled: threading.Event = field(default_factory=threading.Event)
    _server: Optional["ToolServer"] = field(default=None, repr=False)
    _lock: threading.Lock = field(default_factory=threading.Lock, repr=False)
    _seq: int = field(default=0, repr=False)
    _resulted: bool = field(default=False, repr=False)

    def sleep(self, seconds: float) -> bool:
        """Waits ``seconds`` or until the call is cancelled; True when cancelled."""
        return self.cancelled.wait(seconds)

    def post(self, body: dict[str, Any]) -> None:
        """POSTs one callback body to the call's callback URL."""
        assert self._server is not None, "a Call belongs to a ToolServer"
        self._server._post(self.callback_url, body)

    def result(self, text: str, display_as: Optional[Sequence[dict[str, Any]]] = None) -> None:
        """Sends the call's text result, with optional display segments."""
        self.send_result(Result(text=text, display_as=list(display_as) if display_as else None))

    def result_content(self, items: Sequence[dict[str, Any]]) -> None:
        """Sends the call's result as content items (text_item, image_item)."""
        self.send_result(Result(content=list(items)))

    def subscribe(self, text: str) -> None:
        """Sends the call's result and starts a subscription: events follow
        (``event``) until one is final."""
        self.send_result(Result(text=text, subscription=True))

    def send_result(self, r: Result) -> None:
        """Sends a Result as the call's tool_result."""
        if r.text is None and not r.content:
            raise ValueError("a result needs text or content")
        body: dict[str, Any] = {"type": "tool_result", "group_id": self.group_id, "id": self.id, "call_id": self.call_id}
        if r.content:
            body["content"] = r.content
        if r.text is not None:
            body["text"] = r.text
        if r.display_as:
            body["display_as"] = r.display_as
        if r.subscription:
            body["subscription"] = True
        try:
            self.post(body)
        except StatusError:
            self._mark_resulted()  # refused for good: do not send another
            raise
        self._mark_resulted()

    def event(self, text: str, associative: bool = False, final: bool = False) -> None:
        """Sends one subscription event: threaded by default (a child thread
        handles it), ``associative`` inline in the subscribing thread,
        ``final`` ends the subscription. Each carries an event_id (call ID
        and a sequence number) so a retried POST is deduplicated."""
        with self._lock:
            self._seq += 1
            n = self._seq
        body: dict[str, Any] = {"type": "subscription_event", "group_id": self.group_id, "tool_call_id": self.id,
                                "text": text, "event_id": f"{self.id}.{n}"}
        if associative:
            body["associative"] = True
        if final:
            body["final"] = True
        self.post(body)

    def oauth(self, auth_url: str) -> None:
        """Asks the user to authorize at ``auth_url``; the call stays pending."""
        self.post({"type": "oauth", "group_id": self.group_id, "id": self.id, "call_id": self.call_id, "auth_url": auth_url})

    def choice(self, prompt: str, choices: Sequence[str], default: int, response_url: str) -> None:
        """Asks the user to pick one of ``choices``; the answer ({id, selected})
        is POSTed to ``response_url``, which the tool serves."""
        if not choices or not 0 <= default < len(choices):
            raise ValueError("choice: need at least one choice and a default index among them")
        self.post({"type": "user_choice", "group_id": self.group_id, "id": self.id, "call_id": self.call_id,
                   "prompt": prompt, "choices": list(choices), "default": default, "response_url": response_url})

    def ask(self, prompt: str, choices: Sequence[str], default: int = 0, timeout: Optional[float] = None) -> Optional[int]:
        """Asks the user to pick one of ``choices`` and waits for the answer,
        which the server takes at its own ``/choice_response`` (the
        ``response_url`` it sends). Returns the chosen index, or None when the
        call is cancelled or ``timeout`` seconds pass first. The call stays
        pending meanwhile; send its result after."""
        assert self._server is not None, "a Call belongs to a ToolServer"
        url, answer = self._server._await_choice(self, len(choices))
        try:
            self.choice(prompt, choices, default, url)
            if self.cancelled.is_set():
                return None
            answer.wait(timeout)  # set by the answer, or by a cancellation
            return answer.selected
        finally:
            self._server._forget_choice(self)

    def view(self, view_type: str, content: dict[str, Any]) -> None:
        """Replaces the thread's view of ``view_type`` with ``content``."""
        self.post({"type": "view_update", "group_id": self.group_id, "view_type": view_type, "content": content})

    @property
    def resulted(self) -> bool:
        with self._lock:
            return self._resulted

    def _mark_resulted(self) -> None:
        with self._lock:
            self._resulted = True
