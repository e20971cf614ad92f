"""Passages in -> a cited answer out: the sufficiency loop (`loop`), the model (`llm`), the judge, rewriting, citations and their check, the extractive answer.

Importing this package does not import litellm: only a call that reaches the model does.
"""

from retrieval.answer.llm import LlmClient, LlmConfig, LlmUnavailable, llm_config
from retrieval.answer.loop import MAX_ROUNDS, AskOptions, answer_question, ask_events
from retrieval.answer.record import NOT_FOUND, Answer, AnswerSentence, Citation, Round

__all__ = ["MAX_ROUNDS", "NOT_FOUND", "Answer", "AnswerSentence", "AskOptions", "Citation", "LlmClient", "LlmConfig",
           "LlmUnavailable", "Round", "answer_question", "ask_events", "llm_config"]
