"""Writes prompts.jsonl: the quality workload's shipped prompts (see README.md).

The prose prompts are cut from ../corpus/corpus.txt (public domain) by a fixed rule; the others
are written here. Run it from this folder; the output is the same bytes every time.

usage: python3 make_prompts.py > prompts.jsonl
"""

import json
import sys

CONTINUE = "Continue this passage from Alice's Adventures in Wonderland, in the same style:\n\n"

# (id, kind, repeat, prompt). `repeat` marks the subset run again for self-agreement: two of
# each kind.
WRITTEN = [
    # code
    ("code-01", "code", True, "Write a Python function `is_prime(n)` that returns True when n is a prime number. Then write three assert statements that test it."),
    ("code-02", "code", False, "Complete this Rust function so that it returns the sum of the even numbers in the slice:\n\nfn sum_even(xs: &[i64]) -> i64 {\n"),
    ("code-03", "code", False, "Write a SQL query that returns the ten customers with the highest total order value from tables customers(id, name) and orders(id, customer_id, amount)."),
    ("code-04", "code", False, "Explain what this shell command does, step by step:\n\nfind . -name '*.log' -mtime +7 -print0 | xargs -0 gzip"),
    ("code-05", "code", True, "Write a JavaScript function that reverses the words of a sentence, keeping the words themselves intact, for example \"the quick fox\" becomes \"fox quick the\"."),
    ("code-06", "code", False, "Here is a C function with a bug. Find the bug and write the corrected function.\n\nint max(int *a, int n) {\n    int m = 0;\n    for (int i = 1; i <= n; i++)\n        if (a[i] > m) m = a[i];\n    return m;\n}"),
    ("code-07", "code", False, "Write a Python class `Stack` with methods push, pop, peek and is_empty, using a list inside."),
    ("code-08", "code", False, "Write a regular expression that matches dates written as YYYY-MM-DD, and explain each part of it."),
    ("code-09", "code", False, "Continue this Python program, which counts how often each word occurs in a file:\n\nimport sys\nfrom collections import Counter\n\ndef main(path):\n    with open(path) as f:\n"),
    ("code-10", "code", False, "Write a Makefile with targets build, test and clean for a C program made from main.c and util.c."),
    # arithmetic
    ("arith-01", "arithmetic", True, "What is 347 + 589? Show the addition column by column, then give the answer."),
    ("arith-02", "arithmetic", False, "Compute 23 × 47 step by step."),
    ("arith-03", "arithmetic", False, "A train leaves at 9:40 and arrives at 13:15. How long is the journey? Explain."),
    ("arith-04", "arithmetic", False, "What is 15% of 240? Show your working."),
    ("arith-05", "arithmetic", True, "Divide 1,000 by 8 and then subtract 37. What is the result? Explain each step."),
    ("arith-06", "arithmetic", False, "A shop sells pencils at 3 for 45 cents. How much do 14 pencils cost? Work it out."),
    ("arith-07", "arithmetic", False, "What is the sum of the whole numbers from 1 to 50? Explain how you find it."),
    ("arith-08", "arithmetic", False, "Convert 3.75 hours into hours and minutes, and then into seconds."),
    ("arith-09", "arithmetic", False, "Is 391 a prime number? Check it by trying divisors, and say which you tried."),
    ("arith-10", "arithmetic", False, "A rectangle is 12.5 m long and 8 m wide. What are its area and its perimeter?"),
    # lists
    ("list-01", "list", True, "List the twelve months of the year, one per line, each with its number of days."),
    ("list-02", "list", False, "Give a numbered list of ten common kitchen utensils."),
    ("list-03", "list", False, "List the planets of the solar system in order from the Sun, with one fact about each."),
    ("list-04", "list", False, "Name eight musical instruments, grouped into strings, wind and percussion."),
    ("list-05", "list", True, "Write a packing list for a three-day hiking trip, as bullet points."),
    ("list-06", "list", False, "List the first fifteen square numbers, separated by commas."),
    ("list-07", "list", False, "Give five steps for making a cup of tea, numbered."),
    ("list-08", "list", False, "List ten English words that rhyme with \"light\"."),
    ("list-09", "list", False, "List the days of the week in French, German and Spanish, as a table with one row per day."),
    ("list-10", "list", False, "Name six countries in South America and the capital of each."),
    # instruction following
    ("instr-01", "instruction", True, "Rewrite this sentence in the passive voice: \"The committee approved the new budget on Monday.\""),
    ("instr-02", "instruction", False, "Answer in exactly three sentences: why do leaves change colour in autumn?"),
    ("instr-03", "instruction", False, "Translate into French: \"The library opens at nine and closes at six, except on Sundays.\""),
    ("instr-04", "instruction", False, "Summarise in one sentence: \"The bridge, built in 1889, was closed for repairs last spring after engineers found cracks in two of its supports. It reopened in October, and traffic has returned to normal.\""),
    ("instr-05", "instruction", True, "Write a four-line poem about rain in which every line starts with the letter S."),
    ("instr-06", "instruction", False, "Reply only with valid JSON: an object with keys \"name\", \"age\" and \"city\" describing a fictional person."),
    ("instr-07", "instruction", False, "Correct the spelling and grammar: \"Their going to the libary tomorow, becuase they has a exam on friday.\""),
    ("instr-08", "instruction", False, "Write a polite email of no more than five sentences asking a colleague to move a meeting from Tuesday to Thursday."),
    ("instr-09", "instruction", False, "Explain what a rainbow is to a six-year-old child, in simple words."),
    ("instr-10", "instruction", False, "Give the opposite of each word: hot, early, narrow, ancient, generous, quiet."),
]


def prose_prompts(corpus):
    """Every sixth long paragraph of the corpus (400 characters or more, the table of contents
    left out) starting from the sixth, its line breaks joined with spaces, cut at the last space
    before character 320: twelve passages that end mid-sentence."""
    paragraphs = [p for p in corpus.split("\n\n") if len(p) > 400 and not p.lstrip().startswith("CHAPTER")]
    out = []
    for n, i in enumerate(range(6, 6 * 13, 6)):
        text = " ".join(paragraphs[i].split())
        cut = text[:320]
        cut = cut[: cut.rfind(" ")]
        # The first two passages are repeated for self-agreement, as two of each other kind are.
        out.append((f"prose-{n + 1:02}", "prose", n < 2, CONTINUE + cut))
    return out


def main():
    with open("../corpus/corpus.txt", encoding="utf-8") as f:
        corpus = f.read()
    prompts = prose_prompts(corpus) + WRITTEN
    ids = [p[0] for p in prompts]
    assert len(set(ids)) == len(ids), "prompt ids must be unique"
    for pid, kind, repeat, prompt in prompts:
        sys.stdout.write(json.dumps({"id": pid, "kind": kind, "repeat": repeat, "prompt": prompt}, ensure_ascii=False) + "\n")


main()
