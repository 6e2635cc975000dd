#!/usr/bin/env python3
"""Entropix quadrant coverage of a checkpoint, measured with the float64 reference forward.

Usage: quadrant_coverage.py MODEL_DIR [--contexts N] [--length L] [--seed S] [--generate G]
                            [--generations K]
Draws N random token contexts of length 1..L and, with --generate G, K sampled generations of
G tokens from random first tokens (temperature 1, the way the demo wanders). Classifies the last-position distribution
of each by docs/ARCHITECTURE.md §4.2 (H in bits, V in bits^2; first match wins) and prints JSON:
{"contexts": {quadrant: count}, "generation": {quadrant: count}, "seed": S}.
"""
import argparse
import json
import os
import random
import sys

import torch

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from llama_reference import entropy_varentropy, load_model  # noqa: E402

QUADRANTS = ["LELV", "HELV", "LEHV", "HEHV", "ADAPTIVE"]


def quadrant(h, v):
    if h < 0.1 and v < 0.1:
        return "LELV"
    if h > 5.0 and v < 0.1:
        return "HELV"
    if h < 5.0 and v > 5.0:
        return "LEHV"
    if h > 3.0 and v > 5.0:
        return "HEHV"
    return "ADAPTIVE"


def main():
    parser = argparse.ArgumentParser()
    parser.add_argument("model_dir")
    parser.add_argument("--contexts", type=int, default=200)
    parser.add_argument("--length", type=int, default=24)
    parser.add_argument("--seed", type=int, default=1)
    parser.add_argument("--generate", type=int, default=0)
    parser.add_argument("--generations", type=int, default=1)
    args = parser.parse_args()
    rng = random.Random(args.seed)
    torch.manual_seed(args.seed)
    model = load_model(args.model_dir)
    vocab = model.lm_head.shape[0]
    contexts = {q: 0 for q in QUADRANTS}
    for _ in range(args.contexts):
        tokens = [rng.randrange(vocab) for _ in range(rng.randint(1, args.length))]
        logits, _ = model.forward(tokens)
        contexts[quadrant(*entropy_varentropy(logits[-1]))] += 1
    generation = {q: 0 for q in QUADRANTS}
    for _ in range(args.generations):
        tokens = [rng.randrange(vocab)]
        for _ in range(args.generate):
            logits, _ = model.forward(tokens)
            generation[quadrant(*entropy_varentropy(logits[-1]))] += 1
            probs = torch.softmax(logits[-1], -1)
            tokens.append(int(torch.multinomial(probs, 1).item()))
    json.dump({"contexts": contexts, "generation": generation, "seed": args.seed}, sys.stdout)
    print()


if __name__ == "__main__":
    main()
