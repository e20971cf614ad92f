.PHONY: all lint test bench demo readme constraints

all: lint test

lint:
	ruff check .

test:
	python -m pytest

bench:
	python bench/run_benchmarks.py
	python bench/latency.py
	python bench/files.py

demo:
	kg demo

readme:
	python tools/readme_examples.py

constraints:
	tools/update_constraints.sh
