"""One story per answer (docs/methodology.md "One story per answer"): the recommendation and its
confidence block read one distribution, and where the option ranked first is not the one most often
best over the Monte Carlo draws, the recommendation says why in one sentence.

The ranking stays the one ranking of ``app.engine.decision`` (the scores at the inputs' means, the same
for evaluations, batches and recommendations); this only adds the sentence.
"""

from __future__ import annotations

import dataclasses
import math

from app.core.text import msg, num, option_ref, pct
from app.engine.decision import Decision
from app.engine.insights.uncertainty import Uncertainty

#: how many standard errors apart two P(first) estimates must be before they differ (about 95 %)
SAMPLING_ERRORS = 2.0


def sampling_error(first: float, second: float, draws: int) -> float:
    """The standard error of the difference of two options' shares of first places in ``draws`` draws
    (one multinomial sample): ``√((p₁ + p₂ − (p₁ − p₂)²) ÷ draws)``."""
    if draws <= 0:
        return 0.0
    return math.sqrt(max(first + second - (first - second) ** 2, 0.0) / draws)


def most_likely_best(u: Uncertainty) -> str | None:
    """The option first in the most draws (the earlier key on a tie), or None when none ever is."""
    shares = {o: x.probability_first for o, x in u.options.items() if x.probability_first > 0}
    return min(shares, key=lambda o: (-shares[o], o)) if shares else None


def explained(result: Decision, u: Uncertainty) -> Decision:
    """``result`` with one sentence first among the recommended option's reasons when another option is
    first in more of ``u``'s draws: a tie within sampling error, or why the expected figures rank it first
    all the same (its score averaged over the draws, or the inputs' skew). Unchanged otherwise."""
    chosen = result.recommended_option
    leader = most_likely_best(u)
    if chosen is None or leader is None or leader == chosen or chosen not in u.options:
        return result
    mine, theirs = u.options[chosen], u.options[leader]
    if theirs.probability_first <= mine.probability_first:
        return result
    params = {
        "leader": option_ref(leader),
        "p_leader": pct(theirs.probability_first),
        "p_mine": pct(mine.probability_first),
        "draws": num(u.draws),
    }
    head = (
        f"Ranked first on the expected figures, although {params['leader']} is best in {params['p_leader']} of "
        f"{params['draws']} draws against {params['p_mine']} for this option"
    )
    error = sampling_error(theirs.probability_first, mine.probability_first, u.draws)
    if theirs.probability_first - mine.probability_first <= SAMPLING_ERRORS * error:
        margin = pct(SAMPLING_ERRORS * error)
        sentence = msg(
            "reason.confidence.tie", f"{head}: a tie within sampling error (±{margin}).", **params, margin=margin
        )
    elif mine.mean_score >= theirs.mean_score:
        s_mine, s_leader = num(mine.mean_score, 1), num(theirs.mean_score, 1)
        sentence = msg(
            "reason.confidence.margins",
            f"{head}: it scores higher on average over the draws ({s_mine} against {s_leader}), winning by more "
            "where it wins than it loses by elsewhere.",
            **params,
            score_mine=s_mine,
            score_leader=s_leader,
        )
    else:
        s_mine, s_leader = num(mine.mean_score, 1), num(theirs.mean_score, 1)
        sentence = msg(
            "reason.confidence.skew",
            f"{head}: the scores are not linear in the inputs, and averaged over the draws it scores "
            f"{s_mine} against {s_leader}; the expected figures are each formula at the inputs' means.",
            **params,
            score_mine=s_mine,
            score_leader=s_leader,
        )
    ranking = tuple(
        dataclasses.replace(r, reasons=(sentence, *r.reasons)) if r.option == chosen else r for r in result.ranking
    )
    return dataclasses.replace(result, ranking=ranking)


__all__ = ["explained", "most_likely_best", "sampling_error"]
