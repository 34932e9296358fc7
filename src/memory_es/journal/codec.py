"""How events become bytes and back: a msgspec mapper (DESIGN 3).

Canonical JSON (sorted keys) on the way out; on the way in, a strict typed decode against the
event class's own fields, after any ``upcast_vN_vM`` steps, so a stored event that no longer
matches its class is an error rather than a guess.
"""

from __future__ import annotations

from typing import Any, get_type_hints
from uuid import UUID

import msgspec
from eventsourcing.domain import DomainEventProtocol
from eventsourcing.persistence import (
    Mapper,
    MapperDeserialisationError,
    StoredEvent,
    Transcoder,
)
from eventsourcing.utils import get_topic

from memory_es.journal.sealing import SEALED, SEALED_MARK, Sealer
from memory_es.topics import resolve

FORGOTTEN = "_forgotten"  # set on a decoded event whose sealed content was destroyed


def is_forgotten(event: object) -> bool:
    """Was this decoded event's sealed content destroyed (a content-free tombstone)?"""
    return bool(getattr(event, "__dict__", {}).get(FORGOTTEN, False))


class MsgspecTranscoder(Transcoder):
    """Canonical JSON: sorted keys, no spaces, UTF-8. Decoding is untyped; see MsgspecMapper."""

    def encode(self, obj: Any) -> bytes:
        return msgspec.json.encode(obj, order="sorted")

    def decode(self, data: bytes) -> Any:
        return msgspec.json.decode(data)


_decode_types: dict[type, Any] = {}
_SKIP_FIELDS = {"originator_id", "originator_version", "originator_id_type"}


def _decode_type(cls: type) -> Any:
    """A strict msgspec Struct mirroring the event class's fields (cached per class)."""
    try:
        return _decode_types[cls]
    except KeyError:
        hints = get_type_hints(cls)
        fields: list[Any] = [(n, t) for n, t in hints.items() if n not in _SKIP_FIELDS]
        fields.append(("class_version", int, 1))
        struct_type = msgspec.defstruct(
            f"{cls.__name__}State", fields, forbid_unknown_fields=True, kw_only=True
        )
        _decode_types[cls] = struct_type
        return struct_type


class MsgspecMapper(Mapper[UUID]):
    """Typed decode: a stored event whose fields don't match its class is an error, not a guess."""

    def __init__(self, sealer: Sealer | None = None) -> None:
        super().__init__(transcoder=MsgspecTranscoder())
        self.sealer = sealer if sealer is not None else Sealer(None, None)

    def to_stored_event(self, domain_event: DomainEventProtocol[UUID]) -> StoredEvent:
        """The canonical state, with the content fields sealed before it is
        chained: the caller's transaction references only keys it commits."""
        topic = get_topic(type(domain_event))
        if self.sealer.policy is None or topic not in self.sealer.policy:
            return super().to_stored_event(domain_event)
        state = dict(vars(domain_event))  # as Mapper.to_stored_event, sealed before encoding
        originator_id = state.pop("originator_id")
        originator_version = state.pop("originator_version")
        class_version = getattr(type(domain_event), "class_version", 1)
        if class_version > 1:
            state["class_version"] = class_version
        self.sealer.seal_fields(topic, originator_id, originator_version, state)
        return StoredEvent(originator_id, originator_version, topic,
                           self.transcoder.encode(state))

    def to_domain_event(self, stored_event: StoredEvent, *,
                        content: bool = True) -> DomainEventProtocol[UUID]:
        """The typed event; without ``content`` its sealed fields read as their tombstones
        and nothing is decrypted or encoded again, for folds that need none of them (the
        intake view: a third of the cost per event)."""
        cls = resolve(stored_event.topic)
        class_version = getattr(cls, "class_version", 1)
        forgotten = False
        try:
            if not content and class_version == 1 and SEALED_MARK not in stored_event.state:
                # nothing sealed, nothing to upcast: the typed decode straight from the bytes
                # (a resolution in an intake fold: half the cost of the general path)
                typed = msgspec.json.decode(stored_event.state, type=_decode_type(cls))
            elif not content:
                state = msgspec.json.decode(stored_event.state)
                for field, value in state.items():  # is_sealed, inlined: the hot loop
                    if value.__class__ is dict and SEALED in value:
                        state[field] = value.get("void")
                _upcast(cls, state, class_version)
                typed = msgspec.convert(state, type=_decode_type(cls))
            else:
                opened = self.sealer.unseal(stored_event.topic, stored_event.originator_id,
                                            stored_event.originator_version, stored_event.state)
                forgotten, data = opened.forgotten, opened.state
                if class_version > 1:  # upcast old states, then decode the result strictly
                    state = msgspec.json.decode(data)
                    _upcast(cls, state, class_version)
                    data = msgspec.json.encode(state)
                typed = msgspec.json.decode(data, type=_decode_type(cls))
        except (msgspec.DecodeError, msgspec.ValidationError) as e:
            msg = (
                f"event {stored_event.originator_id} v{stored_event.originator_version} "
                f"({stored_event.topic}) does not decode: {e}"
            )
            raise MapperDeserialisationError(msg) from e
        event_state = msgspec.structs.asdict(typed)
        event_state.pop("class_version", None)
        oid = stored_event.originator_id
        event_state["originator_id"] = oid if isinstance(oid, UUID) else UUID(oid)
        event_state["originator_version"] = stored_event.originator_version
        if forgotten:
            event_state[FORGOTTEN] = True
        domain_event = object.__new__(cls)
        object.__setattr__(domain_event, "__dict__", event_state)
        return domain_event  # type: ignore[no-any-return]


def _upcast(cls: type, state: dict[str, Any], class_version: int) -> None:
    """Bring an older stored state up to the class's version, in place."""
    from_version = state.pop("class_version", 1)
    while from_version < class_version:
        getattr(cls, f"upcast_v{from_version}_v{from_version + 1}")(state)
        from_version += 1


class _AdmittedHash(msgspec.Struct):
    content_sha256: str


_ADMITTED_HASH = msgspec.json.Decoder(_AdmittedHash)


def admitted_content_sha256(state: bytes) -> str:
    """The ``content_sha256`` field of an intake's first (Admitted) event state, opened
    ("" once forgotten).

    Read by shape, without the event class, so the journal needs no domain import.
    """
    return _ADMITTED_HASH.decode(state).content_sha256
