.PHONY: all lint test bench demo

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
