"""What the browser tests read off a rendered page, shared by them."""

# Every visible element under `root` whose text is cut: wider content than its box, and not allowed to overflow it
CLIPPED = """(root) => Array.from(document.querySelectorAll(root + ' *'))
  .filter(e => e.offsetParent !== null && e.textContent.trim() && e.scrollWidth > e.clientWidth + 1
               && getComputedStyle(e).overflow !== 'visible')
  .map(e => e.textContent.trim().slice(0, 60))"""
