// A job's search tree (TREE_FORMAT.md, JSON version 1) indexed for drawing: the committed path,
// the branch points with their candidates, and the tree cut into runs — maximal chains of
// single-child nodes of one status — laid out one run per row. The committed path stays in
// column 0 from top to bottom; everything that left it (losing candidates, backspaced tokens)
// hangs one column to the right, just below the node it left from, so the drawing is as wide as
// the nesting is deep, not as the job is long.

export const ON_PATH = new Set(['COMMITTED', 'INSERTED']);

export class TreeModel {
  constructor(tree) {
    this.tree = tree;
    this.byId = new Map();
    for (const node of tree.nodes) this.byId.set(node.id, node);
    this.path = this.committedPath_();
    this.branchPoints = this.path.filter((id) => this.isBranchPoint(id));
    this.branchNumber = new Map(this.branchPoints.map((id, i) => [id, i + 1]));
  }

  node(id) {
    return this.byId.get(id);
  }

  // Children present in this export (a subtree export names children it cut).
  children(id) {
    const node = this.byId.get(id);
    return node ? node.children.filter((c) => this.byId.has(c)) : [];
  }

  // As TREE_FORMAT.md defines it: more than one child that is not a backspaced token.
  isBranchPoint(id) {
    return this.candidates(id).length > 1;
  }

  candidates(id) {
    return this.children(id).filter((c) => this.byId.get(c).status !== 'BACKSPACED');
  }

  // Tokens of the rollout a candidate starts: the nodes below it at its branch depth or deeper
  // (what the winner commits afterwards sits shallower), as `arbor tree` counts them.
  rolloutSize(id) {
    const depth = this.byId.get(id).branch_depth;
    let count = 0;
    const stack = [id];
    while (stack.length) {
      const n = stack.pop();
      ++count;
      for (const c of this.children(n)) {
        if (this.byId.get(c).branch_depth >= depth) stack.push(c);
      }
    }
    return count;
  }

  // The metrics that made `id` a branch point are those of its candidates' step.
  decisionMetrics(id) {
    const first = this.candidates(id)[0];
    return first === undefined ? null : this.byId.get(first).metrics;
  }

  // Node ids from the root through committed and inserted tokens.
  committedPath_() {
    const path = [];
    let node = this.byId.get(this.tree.root);
    if (!node || !(ON_PATH.has(node.status) || node.status === 'PROMPT')) return path;
    while (node) {
      path.push(node.id);
      let next = null;
      for (const c of this.children(node.id)) {
        if (ON_PATH.has(this.byId.get(c).status)) next = this.byId.get(c);
      }
      node = next;
    }
    return path;
  }

  // Runs in row order: {index, nodes, column, status, parentRun, side, branchPoint}. Rows below
  // a node: first each side child's whole subtree one column right, then the main child (the
  // committed one, else a live one, else the best scored) continuing in the same column.
  layout() {
    const runs = [];
    const stack = [{start: this.tree.root, column: 0, parentRun: -1, side: false}];
    while (stack.length) {
      const {start, column, parentRun, side} = stack.pop();
      const run = {index: runs.length, nodes: [start], column, parentRun, side};
      let id = start;
      for (;;) {
        const kids = this.children(id);
        if (kids.length !== 1 || !this.sameRun_(id, kids[0])) break;
        id = kids[0];
        run.nodes.push(id);
      }
      run.status = this.byId.get(start).status;
      run.branchPoint = this.isBranchPoint(id) ? id : null;
      runs.push(run);
      const kids = this.children(id);
      if (!kids.length) continue;
      const main = this.mainChild_(kids);
      // Pushed in reverse so the sides pop first, in creation order, and the main child last.
      stack.push({start: main, column, parentRun: run.index, side: false});
      const sides = kids.filter((c) => c !== main);
      for (let i = sides.length - 1; i >= 0; --i) {
        stack.push({start: sides[i], column: column + 1, parentRun: run.index, side: true});
      }
    }
    return runs;
  }

  sameRun_(id, child) {
    const a = this.byId.get(id);
    const b = this.byId.get(child);
    return a.status === b.status && a.status !== 'PROMPT' && b.branch_score === 0 &&
        a.branch_depth === b.branch_depth;
  }

  mainChild_(kids) {
    const nodes = kids.map((c) => this.byId.get(c));
    const pick = nodes.find((n) => ON_PATH.has(n.status)) ||
        nodes.find((n) => n.status === 'EXPLORED') ||
        nodes.reduce((best, n) => ((n.branch_score ?? -Infinity) > (best.branch_score ?? -Infinity) ? n : best));
    return pick.id;
  }
}

// Which columns carry a vertical line through each row: a run's main continuation is joined to
// its parent run by a line in the parent's column over the rows between them (the side
// subtrees). Returns, per row, a string of two-character cells: "│ ", "├─" or "  ".
export function gutters(runs) {
  const columns = 1 + runs.reduce((m, r) => Math.max(m, r.column), 0);
  const open = runs.map(() => new Uint8Array(columns));
  const rowOf = new Map(runs.map((r, row) => [r.index, row]));
  runs.forEach((run, row) => {
    if (run.parentRun < 0 || run.side) return;
    const parentRow = rowOf.get(run.parentRun);
    for (let r = parentRow + 1; r < row; ++r) open[r][run.column] = 1;
  });
  return runs.map((run, row) => {
    let cells = '';
    for (let c = 0; c < run.column; ++c) {
      if (run.side && c === run.column - 1) {
        cells += open[row][c] ? '├─' : '└─';
      } else {
        cells += open[row][c] ? '│ ' : '  ';
      }
    }
    return cells;
  });
}

// Token text made safe to show in one place: newlines stay (they are content) when `keepNewlines`,
// other control characters become visible escapes, as the terminal views print them.
export function displayText(text, keepNewlines = true) {
  let out = '';
  for (const ch of text) {
    const code = ch.codePointAt(0);
    if (ch === '\n' && keepNewlines) out += ch;
    else if (ch === '\n') out += '\\n';
    else if (ch === '\t') out += '\\t';
    else if (ch === '\r') out += '\\r';
    else if (code < 0x20 || code === 0x7f) out += `\\x${code.toString(16).padStart(2, '0')}`;
    else out += ch;
  }
  return out;
}
