#!/usr/bin/env python3
"""How far a fusion of search's signals can go on one corpus, whole
functions only (no chunking): the ceiling the README quotes.

    fusion.py <corpus.json> <language> <embeddings-base-url>

Embeds every function with the daemon's header (path, symbol with its
words, language) and every query framed as the daemon frames it, from any
OpenAI-compatible `/embeddings` server; computes over whole functions the
signals of `ranking.rs` (cosine, BM25 with English stems and camelCase
splitting, the symbol share m/sqrt(n*k), the path share) and prints
MRR@10 for each alone, the daemon's fusion, the best of a grid of its
weights, reciprocal-rank fusion, per-query z-score mixes, vectors centred
on their mean, and pseudo-relevance feedback. Needs numpy and
snowballstemmer (`pip install numpy snowballstemmer`). Development only:
no test runs it.
"""
import itertools, json, math, re, sys, urllib.request
from collections import Counter

import numpy as np
import snowballstemmer

STEM = snowballstemmer.stemmer("english")
STOP = set("a an the of to in for on and or is are be by with from as at this that it its if else not no into "
           "than then when which who what where how".split())


def embed(base, texts):
    out = []
    for start in range(0, len(texts), 64):
        body = json.dumps({"model": "m", "input": texts[start:start + 64]}).encode()
        request = urllib.request.Request(base.rstrip("/") + "/embeddings", data=body,
                                         headers={"Content-Type": "application/json"})
        for item in json.load(urllib.request.urlopen(request))["data"]:
            vector = np.array(item["embedding"], dtype=np.float32)
            out.append(vector / (np.linalg.norm(vector) + 1e-9))
    return np.stack(out)


def terms(text):
    return [STEM.stemWord(part.lower())
            for word in re.findall(r"[A-Za-z0-9]+", text)
            for part in re.findall(r"[A-Z]+(?=[A-Z][a-z])|[A-Z]?[a-z]+|[A-Z]+|[0-9]+", word)]


def words(name):
    spaced = re.sub(r"([a-z0-9])([A-Z])", r"\1 \2", name).replace("_", " ")
    return re.sub(r"\s+", " ", spaced).strip().lower()


def mrr(scores):
    """MRR@10 of a query x function matrix whose target is the diagonal."""
    total = 0.0
    for query in range(scores.shape[0]):
        above = int((scores[query] > scores[query, query]).sum())
        total += 1 / (above + 1) if above < 10 else 0
    return total / scores.shape[0]


def ranks(scores):
    order = np.argsort(-scores, axis=1)
    out = np.empty_like(order)
    for row in range(scores.shape[0]):
        out[row, order[row]] = np.arange(scores.shape[1])
    return out


def zscore(scores):
    return (scores - scores.mean(1, keepdims=True)) / (scores.std(1, keepdims=True) + 1e-9)


def main():
    corpus_path, language, base = sys.argv[1:4]
    corpus = json.load(open(corpus_path))
    n = len(corpus)
    bodies = [Counter(terms(f["code"])) for f in corpus]
    lengths = np.array([sum(body.values()) for body in bodies], float)
    average = lengths.mean()
    df = Counter(term for body in bodies for term in body)
    symbols = [set(terms(f["name"])) for f in corpus]
    paths = [set(terms(f["path"])) for f in corpus]
    bm25, symbol, path = np.zeros((n, n)), np.zeros((n, n)), np.zeros((n, n))
    counts = []
    for q, f in enumerate(corpus):
        unique = list(dict.fromkeys(terms(f["query"])))
        query_terms = [t for t in unique if t not in STOP] or unique
        counts.append(max(len(query_terms), 1))
        for t in query_terms:
            idf = math.log(1 + (n - df[t] + 0.5) / (df[t] + 0.5))
            for d in range(n):
                c = bodies[d].get(t, 0)
                if c:
                    bm25[q, d] += idf * c * 2.2 / (c + 1.2 * (0.25 + 0.75 * lengths[d] / average))
        for d in range(n):
            matched = sum(1 for t in query_terms if t in symbols[d])
            symbol[q, d] = matched / math.sqrt(len(query_terms) * max(len(symbols[d]), 1)) if query_terms else 0
            path[q, d] = sum(1 for t in query_terms if t in paths[d]) / max(len(query_terms), 1)
    text = bm25 / (bm25 + np.array(counts, float)[:, None] / 2)

    def header(f):
        spelled = words(f["name"])
        named = f"{f['name']} ({spelled})" if spelled != f["name"] else f["name"]
        return f"path: {f['path']}\nsymbol: function {named}\nlanguage: {language}\n\n"

    docs = embed(base, [header(f) + f["code"] for f in corpus])
    queries = embed(base, ["where is the code for " + f["query"] for f in corpus])
    cosine = queries @ docs.T

    def fused(cos, wt=0.45, wp=0.30, ws=0.35, w=1.0):
        v = (cos + 1) / 2
        lexical = np.minimum(1, wt * text + wp * path + ws * symbol)
        return v + (1 - v) * (1 - (1 - lexical) ** w)

    print(f"{corpus_path}: {n} functions")
    print(f"cosine {mrr(cosine):.3f}  BM25 {mrr(bm25):.3f}  symbol {mrr(symbol + 1e-6 * cosine):.3f}")
    print(f"the daemon's fusion {mrr(fused(cosine)):.3f}")
    grid = max((mrr(fused(cosine, *weights)), weights) for weights in
               itertools.product([0.2, 0.3, 0.45, 0.6], [0, 0.15, 0.3], [0.2, 0.35, 0.5, 0.7, 1], [0.5, 1, 2]))
    print(f"best of its weights {grid[0]:.3f} (text, path, symbol, exponent {grid[1]})")
    rc, rb, rs = ranks(cosine), ranks(bm25 + 1e-9 * cosine), ranks(symbol + 1e-9 * cosine)
    rrf = max(mrr(a / (k + rc) + b / (k + rb) + c / (k + rs))
              for k in [10, 30, 60] for a, b, c in [(1, 1, 0), (1, 1, 0.5), (1, 0.5, 0.5), (2, 1, 1)])
    print(f"reciprocal-rank fusion, best {rrf:.3f}")
    z = max(mrr(zscore(cosine) + b * zscore(bm25) + c * zscore(symbol) + p * zscore(path))
            for b, c, p in itertools.product([0, 0.1, 0.2, 0.3, 0.5], [0, 0.2, 0.4, 0.6, 1], [0, 0.2, 0.4]))
    print(f"z-score mix, best {z:.3f}")
    centred = docs - 0.5 * docs.mean(0)
    centred /= np.linalg.norm(centred, axis=1, keepdims=True)
    print(f"centred vectors, fused {mrr(fused(queries @ centred.T)):.3f}")
    base_rank = fused(cosine)
    feedback = 0.0
    for k, alpha in itertools.product([3, 5, 10], [0.3, 0.6, 1.0]):
        top = np.argsort(-base_rank, axis=1)[:, :k]
        expanded = queries + alpha * docs[top].mean(1)
        expanded /= np.linalg.norm(expanded, axis=1, keepdims=True)
        feedback = max(feedback, mrr(fused(expanded @ docs.T)))
    print(f"pseudo-relevance feedback, best {feedback:.3f}")


if __name__ == "__main__":
    main()
