"""Pointer paths: the points a pointer passes through from one place to another.

`instant` jumps; `smooth` follows the straight line with an ease-in-out speed; `human`
follows a gently curved, slightly wobbling path that can overshoot and come back, drawn from
a random generator seeded by `seed`, so the same seed (and the same ends) gives the same
points. A path is a pure function of its inputs: the input thread only plays it.
"""

from __future__ import annotations

import math
import random

import msgspec

from holm.wire.values import Motion


class MotionStep(msgspec.Struct, array_like=True):
    x: int
    y: int
    # Pause after moving to (x, y), before the next step.
    pause_ms: int = 0


def plan(
    start: tuple[int, int],
    end: tuple[int, int],
    motion: Motion,
    seed: int | None,
    bounds: tuple[int, int],
) -> list[MotionStep]:
    """The steps from `start` to `end` (the last step is `end`), clamped to the screen of
    size `bounds`."""
    match motion:
        case "instant":
            steps = [MotionStep(end[0], end[1])]
        case "smooth":
            steps = _smooth(start, end)
        case "human":
            steps = _human(start, end, random.Random(seed))
        case _:
            raise ValueError(f"unknown motion {motion!r}")
    width, height = bounds
    return [
        MotionStep(min(max(s.x, 0), width - 1), min(max(s.y, 0), height - 1), s.pause_ms)
        for s in steps
    ]


def _ease_in_out(t: float) -> float:
    return 4 * t**3 if t < 0.5 else 1 - (-2 * t + 2) ** 3 / 2


def _smooth(start: tuple[int, int], end: tuple[int, int]) -> list[MotionStep]:
    distance = math.dist(start, end)
    count = max(4, min(30, int(distance / 25)))
    steps = []
    for i in range(1, count + 1):
        t = _ease_in_out(i / count)
        x = start[0] + (end[0] - start[0]) * t
        y = start[1] + (end[1] - start[1]) * t
        steps.append(MotionStep(round(x), round(y), 8))
    steps[-1] = MotionStep(end[0], end[1])
    return steps


def _bezier(
    p0: tuple[float, float],
    p1: tuple[float, float],
    p2: tuple[float, float],
    p3: tuple[float, float],
    t: float,
) -> tuple[float, float]:
    u = 1 - t
    return (
        u**3 * p0[0] + 3 * u**2 * t * p1[0] + 3 * u * t**2 * p2[0] + t**3 * p3[0],
        u**3 * p0[1] + 3 * u**2 * t * p1[1] + 3 * u * t**2 * p2[1] + t**3 * p3[1],
    )


def _curve(
    start: tuple[float, float], end: tuple[float, float], rng: random.Random, jitter: float
) -> list[MotionStep]:
    dx, dy = end[0] - start[0], end[1] - start[1]
    distance = math.hypot(dx, dy)
    if distance < 1:
        return [MotionStep(round(end[0]), round(end[1]))]
    # Control points off the straight line, to one side or the other, as a wrist arcs.
    nx, ny = -dy / distance, dx / distance
    bend = distance * rng.uniform(0.05, 0.25) * rng.choice((-1, 1))
    c1 = (start[0] + dx * 0.3 + nx * bend, start[1] + dy * 0.3 + ny * bend)
    c2 = (start[0] + dx * 0.7 + nx * bend * 0.6, start[1] + dy * 0.7 + ny * bend * 0.6)
    count = max(6, min(60, int(distance / 12)))
    steps = []
    for i in range(1, count + 1):
        x, y = _bezier(start, c1, c2, end, _ease_in_out(i / count))
        wobble = jitter if i < count else 0.0
        steps.append(
            MotionStep(
                round(x + rng.uniform(-wobble, wobble)),
                round(y + rng.uniform(-wobble, wobble)),
                rng.randint(5, 12),
            )
        )
    return steps


def _human(start: tuple[int, int], end: tuple[int, int], rng: random.Random) -> list[MotionStep]:
    distance = math.dist(start, end)
    target: tuple[float, float] = (float(end[0]), float(end[1]))
    steps: list[MotionStep] = []
    if distance > 200 and rng.random() < 0.5:
        # Overshoot a little along the direction of travel, then come back.
        past = rng.uniform(0.02, 0.06)
        target = (
            end[0] + (end[0] - start[0]) * past,
            end[1] + (end[1] - start[1]) * past,
        )
        steps = _curve((float(start[0]), float(start[1])), target, rng, 1.5)
        steps += _curve(target, (float(end[0]), float(end[1])), rng, 0.5)
    else:
        steps = _curve((float(start[0]), float(start[1])), target, rng, 1.5)
    steps[-1] = MotionStep(end[0], end[1])
    return steps
