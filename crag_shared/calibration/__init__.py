"""Fitting the action thresholds: the paper's Eq. 2 (`eq2.py`), and the data it is fitted on when all a
user has is questions with their answers (`answers.py`, `qa.py`)."""

from .answers import MAX_ANSWER_CHARS, QAPair, holds_answer, normalized, qa_pair, read_qa, read_retrieved, weak_answers
from .eq2 import MAX_STEPS, Calibration, equation_2, fit_thresholds
from .qa import (
    NEAR_MISS_LEAST,
    Judge,
    JudgedQuery,
    QACalibration,
    TradeOff,
    calibrate_qa,
    judged_queries,
    judged_scores,
    near_misses,
    objective_on,
    tradeoff,
)

__all__ = ["MAX_ANSWER_CHARS", "MAX_STEPS", "NEAR_MISS_LEAST", "Calibration", "Judge", "JudgedQuery",
           "QACalibration", "QAPair", "TradeOff", "calibrate_qa", "equation_2", "fit_thresholds", "holds_answer",
           "judged_queries", "judged_scores", "near_misses", "normalized", "objective_on", "qa_pair", "read_qa",
           "read_retrieved", "tradeoff", "weak_answers"]
