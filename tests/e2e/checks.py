"""What the browser tests read off a rendered page, shared by them."""

# Every visible element under `root` whose text is cut: wider content than its box and not allowed to overflow it;
# inputs too (a select's chosen value and a text box show their text as the input's value, not as text content)
CLIPPED = """(root) => Array.from(document.querySelectorAll(root + ' *'))
  .filter(e => e.offsetParent !== null && e.scrollWidth > e.clientWidth + 1
               && (e.tagName === 'INPUT' ? e.value.trim() && e.type !== 'number'
                                         : e.textContent.trim() && getComputedStyle(e).overflow !== 'visible'))
  .map(e => (e.tagName === 'INPUT' ? e.value : e.textContent).trim().slice(0, 60))"""
