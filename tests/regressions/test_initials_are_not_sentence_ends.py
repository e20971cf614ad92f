"""An initial ("directed by S. S. Vasan") was cut as a sentence of its own: the extractive answer then quoted
"S." as a line, and the citation check found nothing of it in the passage (support 0, an unsupported
citation). Initials no longer end a sentence, in the answer's sentences and in the check alike."""

from __future__ import annotations

from retrieval.answer.cite import check_answer
from retrieval.answer.extractive import extract_answer
from retrieval.answer.record import Citation
from retrieval.answer.terms import split_sentences

PASSAGE = ("Paigham is a 1959 Indian Hindi-language film produced and directed by S. S. Vasan. "
           "The film was later remade in Tamil as Irumbu Thirai by S. S. Vasan.")


def test_an_initial_does_not_end_a_sentence():
    assert split_sentences("Allen worked with Paul G. Allen. Then he left.") == ["Allen worked with Paul G. Allen.", "Then he left."]


def test_the_extractive_answer_quotes_the_name_whole_and_supported():
    citations = [Citation(1, "c1", "d1", "Paigham", "wiki:paigham", "", (1, 2), PASSAGE)]
    text = extract_answer("Who directed the film Paigham?", citations, "en")
    _, sentences = check_answer(text, citations, 0.5, "en")
    assert sentences[0].text == "Paigham is a 1959 Indian Hindi-language film produced and directed by S. S. Vasan."
    assert all(s.support >= 0.9 and not s.flagged for s in sentences)
