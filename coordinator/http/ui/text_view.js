// The job's committed text, each token coloured by the strategy that produced it: inserted
// thinking tokens outlined, backspaced tokens struck through just before their re-draw (or
// hidden), and a numbered marker at every branch point that opens its candidates.

import {el, strategyColor, tokenSpan} from './tree_view.js';

export class TextView {
  constructor(container, {onBranch}) {
    this.container = container;
    this.showRetracted = true;
    container.addEventListener('click', (e) => {
      const marker = e.target.closest('[data-branch]');
      if (marker) onBranch(Number(marker.dataset.branch));
    });
  }

  render(model) {
    const out = document.createDocumentFragment();
    const path = model.path;
    for (let k = 0; k + 1 < path.length; ++k) {
      const from = path[k];
      if (this.showRetracted) {
        for (const c of model.children(from)) {
          if (model.node(c).status === 'BACKSPACED') out.append(tokenSpan(model.node(c), true));
        }
      }
      if (model.branchNumber.has(from)) {
        const marker = el('sup', 'branch-ref', `[${model.branchNumber.get(from)}]`);
        marker.dataset.branch = String(from);
        marker.title = 'branch point: click for its candidates';
        marker.style.color = strategyColor('BRANCH');
        out.append(marker);
      }
      out.append(tokenSpan(model.node(path[k + 1]), true));
    }
    if (path.length <= 1) out.append(el('span', 'placeholder', 'no tokens committed yet'));
    this.container.replaceChildren(out);
  }

  // Brings the token of node `id` into view and marks it for a moment.
  reveal(id) {
    const span = this.container.querySelector(`.tok[data-node="${id}"]`);
    if (!span) return;
    span.scrollIntoView({block: 'center', behavior: 'smooth'});
    span.classList.add('flash');
    setTimeout(() => span.classList.remove('flash'), 1200);
  }
}
