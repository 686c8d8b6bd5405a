"""Simulated client processes: sequential logic written as generators, run on the event loop.

A client task is a generator that yields *effects* and receives their results:

* ``Call(request, timeout_ms)`` -- send a request through the simulated network; the result is
  the broker's response, or ``TIMEOUT`` if none arrived in time (the request may still land
  later: the network can deliver it after the client gave up);
* ``Sleep(ms)`` -- wait.

A ``Proc`` (one incarnation of a client process) owns tasks (a worker has a heartbeat task
and a main task, like a consumer's heartbeat thread).  The simulator can

* **pause** it (SIGSTOP): nothing of it runs until it is resumed; answers that arrived wait;
* **crash** it (kill -9): its tasks vanish with all their state; a new incarnation starts
  from scratch later.
"""

from __future__ import annotations

import itertools
from collections.abc import Callable, Generator
from dataclasses import dataclass, field
from typing import Any

from chaos.sim_loop import SimLoop
from chaos.sim_net import SimNet


@dataclass(frozen=True, slots=True)
class Call:
    request: Any
    timeout_ms: int = 2000


@dataclass(frozen=True, slots=True)
class Sleep:
    ms: int


Effect = Call | Sleep
TaskGen = Generator[Effect, Any, None]


class _Timeout:
    _instance: _Timeout | None = None

    def __repr__(self) -> str:
        return "TIMEOUT"


TIMEOUT = _Timeout()


class ProcessExit(Exception):
    """Raised inside a task to end its whole process (a fatal client error)."""


@dataclass(eq=False)
class Task:
    proc: Proc
    name: str
    gen: TaskGen
    waiting: int | None = None
    done: bool = False


@dataclass(eq=False)
class Proc:
    """One incarnation of a client process."""

    name: str  # history process name, e.g. "w1.3"
    slot: str  # the logical client, e.g. "w1"
    incarnation: int
    alive: bool = True
    paused_until: int | None = None
    tasks: list[Task] = field(default_factory=list)
    on_exit: Callable[[Proc, str], None] | None = None

    @property
    def paused(self) -> bool:
        return self.paused_until is not None


class ClientRuntime:
    """Runs client tasks on the loop and routes their calls through the network."""

    def __init__(self, loop: SimLoop, net: SimNet) -> None:
        self._loop = loop
        self._net = net
        self._req_ids = itertools.count(1)

    def spawn(self, proc: Proc, name: str, gen: TaskGen) -> Task:
        task = Task(proc, name, gen)
        proc.tasks.append(task)
        self._loop.after(0, lambda: self._resume(task, None))
        return task

    def pause(self, proc: Proc, until_ms: int) -> None:
        if proc.alive:
            proc.paused_until = max(proc.paused_until or 0, until_ms)

    def resume_now(self, proc: Proc) -> None:
        proc.paused_until = None

    def kill(self, proc: Proc) -> None:
        proc.alive = False
        for task in proc.tasks:
            task.done = True
            task.gen.close()

    def _resume(self, task: Task, value: Any) -> None:
        proc = task.proc
        if task.done or not proc.alive:
            return
        if proc.paused_until is not None:
            if proc.paused_until > self._loop.now_ms():
                self._loop.at(proc.paused_until, lambda: self._resume(task, value))
                return
            proc.paused_until = None
        try:
            effect = task.gen.send(value)
        except StopIteration:
            task.done = True
            return
        except ProcessExit as exc:
            task.done = True
            self.kill(proc)
            if proc.on_exit is not None:
                proc.on_exit(proc, str(exc))
            return
        if isinstance(effect, Sleep):
            self._loop.after(effect.ms, lambda: self._resume(task, None))
            return
        req_id = next(self._req_ids)
        task.waiting = req_id
        self._net.send(proc.slot, effect.request, lambda r: self._answer(task, req_id, r))
        self._loop.after(effect.timeout_ms, lambda: self._answer(task, req_id, TIMEOUT))

    def _answer(self, task: Task, req_id: int, response: Any) -> None:
        if task.waiting != req_id:
            return  # a late answer (the call timed out) or a timeout after the answer
        task.waiting = None
        self._resume(task, response)
