"""KIP-848 regex subscriptions: a member's ``SubscribedTopicRegex``, resolved by the coordinator.

As Kafka 4.4's group coordinator (GroupMetadataManager, TopicRegexResolver):

- A heartbeat whose regex is new to the group compiles it as RE2J does
  (``coordinator.group.re2_syntax``): a pattern RE2J refuses answers INVALID_REGULAR_EXPRESSION
  ("SubscribedTopicRegex `...` is not a valid regular expression: <RE2J's description>.").
  ``""`` (what a client sends to drop its regex) and None are no regex.
- A member's regex is written with its ConsumerGroupMemberMetadata record; each regex the
  group's members subscribe to has one ConsumerGroupRegularExpression record: the topics it
  matched (whole names), the topic metadata's version and the time of the resolution.  When
  the last member subscribed to a regex leaves it, its record's tombstone is written.
- Resolution is not part of the heartbeat: the heartbeat schedules it (one at a time per
  group, a timer of the Clock at once) when the group's regexes need it -- one is not resolved
  yet, a topic was created since the last resolution, or ``group.consumer.regex.refresh.
  interval.ms`` passed -- and never within 10 s of the last one.  It resolves every regex of
  the group against every topic, leaving out those the principal of the heartbeat that asked
  may not DESCRIBE, and writes the regex records.  If the group's subscribed topics changed,
  the group epoch is bumped with a new target assignment in the same write (Kafka bumps the
  epoch and computes the target at the next heartbeat: members see the same).
- A member subscribing to a regex the group has resolved already bumps the group epoch at once.

A deleted topic stays in a resolution until the next one; the assignment leaves it out at once
(the topology holds only existing topics).
"""

from __future__ import annotations

import logging
from collections import Counter
from collections.abc import Callable
from dataclasses import replace
from enum import Enum

from coordinator.group.consumer_change import ConsumerGroupChange
from coordinator.group.consumer_model import ConsumerMember, ConsumerProtocolGroup
from coordinator.group.consumer_records import RegexValue
from coordinator.group.parts import GroupContext, TopicCatalog
from coordinator.group.re2_syntax import RegexSyntaxError, compile_re2
from txn.errors import ErrorCode

__all__ = [
    "BATCH_REFRESH_MIN_INTERVAL_MS",
    "DescribeFilter",
    "RegexStatus",
    "RegexSubscriptions",
]

log = logging.getLogger("sharetxn.groups")

#: Kafka's REGEX_BATCH_REFRESH_MIN_INTERVAL_MS: resolutions of a group are at least this apart.
BATCH_REFRESH_MIN_INTERVAL_MS = 10_000

#: Whether the principal of the heartbeat that asked for a resolution may describe a topic.
DescribeFilter = Callable[[str], bool]


class RegexStatus(Enum):
    NO_CHANGE = "no change"
    UPDATED = "updated"  # the member's regex changed
    UPDATED_AND_RESOLVED = "resolved"  # ... to one the group has resolved: a new epoch


def _is_set(regex: str | None) -> bool:
    return bool(regex)


def _subscribers(group: ConsumerProtocolGroup | None) -> Counter[str]:
    """How many of the group's members subscribe to each regex."""
    if group is None:
        return Counter()
    return Counter(m.regex for m in group.members.values() if m.regex)


def _last_refresh_ms(group: ConsumerProtocolGroup | None) -> int | None:
    """When the group's regexes were last resolved (all at once); None: never."""
    if group is None or not group.resolved:
        return None
    return next(iter(group.resolved.values())).timestamp


class RegexSubscriptions:
    """The regex part of ``ConsumerMembership``: it updates a member's regex in a heartbeat's
    change, schedules the group's resolutions and writes them.

    ``topology(members)`` and ``new_target(change)`` are the membership's (a change of the
    group's subscribed topics is a new epoch and target); ``write_change(change)`` writes it.
    """

    def __init__(
        self,
        context: GroupContext,
        catalog: TopicCatalog | None,
        *,
        topology: Callable[[dict[str, ConsumerMember]], tuple[tuple[str, str, int], ...]],
        new_target: Callable[[ConsumerGroupChange], None],
        write_change: Callable[[ConsumerGroupChange], ErrorCode],
    ) -> None:
        self._context = context
        self._catalog = catalog
        self._topology = topology
        self._new_target = new_target
        self._write_change = write_change

    @staticmethod
    def invalid(regex: str | None) -> str | None:
        """Kafka's message for a regex RE2J refuses; None for a valid one or none."""
        if not _is_set(regex):
            return None
        assert regex is not None
        try:
            compile_re2(regex)
        except RegexSyntaxError as e:
            why = e.description
            return f"SubscribedTopicRegex `{regex}` is not a valid regular expression: {why}."
        return None

    # -- the heartbeat --------------------------------------------------------------------------

    def update(
        self,
        change: ConsumerGroupChange,
        previous: ConsumerMember | None,
        member: ConsumerMember,
        may_describe: DescribeFilter | None,
    ) -> tuple[ConsumerMember, RegexStatus]:
        """The member (its regex already the request's) with its regex's topics, and whether
        its regex changed; a tombstone for a regex it was the last to subscribe to; and the
        group's resolution scheduled if it needs one (Kafka's maybeUpdateRegularExpressions).
        The regex must be valid (``invalid``)."""
        live = change.group
        subscribers = _subscribers(live)
        old = previous.regex if previous is not None else None
        new = member.regex
        status = RegexStatus.NO_CHANGE
        require = False
        if old != new:
            status = RegexStatus.UPDATED
            if _is_set(old) and old is not None and subscribers[old] == 1:
                change.put_regex(old, None)
            if _is_set(new) and new is not None:
                if subscribers[new] == 0:
                    require = True
                elif new in change.resolved:
                    status = RegexStatus.UPDATED_AND_RESOLVED
            elif _is_set(old):
                status = RegexStatus.UPDATED_AND_RESOLVED  # its topics leave the subscription
        resolution = change.resolved.get(new) if new else None
        topics = frozenset(resolution.topics) if resolution is not None else frozenset()
        if topics != member.regex_topics:
            member = replace(member, regex_topics=topics)
        self._maybe_schedule(change.group_id, live, subscribers, old, new, require, may_describe)
        return member, status

    def _maybe_schedule(
        self,
        group_id: str,
        live: ConsumerProtocolGroup | None,
        subscribers: Counter[str],
        old: str | None,
        new: str | None,
        require: bool,
        may_describe: DescribeFilter | None,
    ) -> None:
        if not require and not subscribers:
            return
        key = ("regex", group_id)
        if key in self._context.timers.by_key:  # a resolution is under way
            return
        now = self._context.clock.now_ms()
        last = _last_refresh_ms(live)
        if last is not None and now <= last + BATCH_REFRESH_MIN_INTERVAL_MS:
            return
        regexes = Counter(subscribers)
        if old:
            regexes[old] -= 1
        if new:
            regexes[new] += 1
        wanted = sorted(r for r, n in regexes.items() if n > 0)
        resolved = live.resolved if live is not None else {}
        require |= len(wanted) != len(resolved)
        if self._catalog is not None and resolved:
            version = next(iter(resolved.values())).version
            require |= version < self._catalog.created_version
        interval = self._context.config.get_int("group.consumer.regex.refresh.interval.ms")
        require |= last is None or now > last + interval
        if require and wanted:
            self._context.timers.arm(
                self._context.clock,
                key,
                0,
                lambda: self._resolve(group_id, wanted, may_describe),
            )

    # -- the resolution -------------------------------------------------------------------------

    def _resolve(
        self, group_id: str, regexes: list[str], may_describe: DescribeFilter | None
    ) -> None:
        """Resolve ``regexes`` for the group and write what changed (Kafka's
        refreshRegularExpressions, then handleRegularExpressionsResult)."""
        self._context.timers.by_key.pop(("regex", group_id), None)
        group = self._context.consumer_groups.get(group_id)
        if group is None or self._context.runtime.closed:
            log.debug("consumer group %s: its regexes were resolved but it is gone", group_id)
            return
        now = self._context.clock.now_ms()
        names = [t.name for t in self._catalog.all()] if self._catalog is not None else []
        version = self._catalog.version if self._catalog is not None else 0
        matched: dict[str, frozenset[str]] = {}
        for regex in regexes:
            try:
                pattern = compile_re2(regex)
            except RegexSyntaxError as e:  # refused when a member sent it: not expected here
                log.error("consumer group %s: regex %r: %s", group_id, regex, e.description)
                matched[regex] = frozenset()
                continue
            found = (n for n in names if pattern.matches(n))
            matched[regex] = frozenset(n for n in found if may_describe is None or may_describe(n))
        change = ConsumerGroupChange(group_id, group)
        subscribers = _subscribers(group)
        for regex, topics in matched.items():
            if subscribers[regex] == 0:
                continue
            change.put_regex(regex, RegexValue(tuple(sorted(topics)), version, now))
            for member in list(change.members.values()):
                if member.regex == regex and member.regex_topics != topics:
                    change.put_member(replace(member, regex_topics=topics))
        if self._topology(change.members) != change.topology:
            log.info("consumer group %s: its regexes now match other topics", group_id)
            self._new_target(change)
        if self._write_change(change) is not ErrorCode.NONE:
            log.info("consumer group %s: the resolution of its regexes was not written", group_id)

    # -- a member leaves ------------------------------------------------------------------------

    @staticmethod
    def drop_unused(change: ConsumerGroupChange) -> None:
        """The tombstones of the regexes no member of the change subscribes to any more."""
        used = {m.regex for m in change.members.values() if m.regex}
        for regex in list(change.resolved):
            if regex not in used:
                change.put_regex(regex, None)
