#!/usr/bin/env python3
"""Every public type and member the guides name has a doc comment in the API reference.

    scripts/check-api-docs.py APIDOCS GUIDE.md...

APIDOCS is the javadoc site `make docs` builds (target/site/apidocs). The guides' code, inline
(`...`) and fenced (```java), names the API as an app author reads it:

  - a type: `Table`, `Page.Row`, `DbException.UniqueViolation`, `kiln.server.FeedEvents`;
  - a member of a type: `Range.prefix(k)`, `Codec.STRING`, `Table.MAX_VALUE_BYTES`;
  - a constructor: `new HttpException(404, "...")`;
  - a member of a variable: `feed.after(seq)`, `req.pathParam("id")`, `db.table(...)`, where the
    variable's type is its declaration in the same guide (`ChangeFeed<..> feed = ...`,
    `for (ChangeSet<..> set : ...)`, `(Page<..> page)`) or, for the names every guide uses without
    declaring them, RECEIVERS below.

Each must have a doc comment in the reference that says what it does: a main description, shown in
the summary tables, not block tags alone (a member inherited from a kiln class: that class's
comment; a record's accessor: its @param in the record's comment; from a JDK class: the JDK's). A
type or variable the reference does not hold (the JDK's, the demo's, a test's) is not checked. A
member the named type does not have is reported too: the guide names something that is not there
(renamed or removed). Prints each failure with the guide and line; exit status 1 if any, else
prints what it checked.
"""

import html
import os
import re
import sys
import urllib.parse
from collections import defaultdict

# Variables the guides use without declaring them, and their types (simple names in the reference).
RECEIVERS = {
    "db": "Db",
    "txn": "Txn",
    "t": "Txn",
    "req": "Request",
    "request": "Request",
    "index": "Index",
    "feed": "ChangeFeed",
    "response": "Response",
    "exchange": "AbstractRouter.Exchange",
    "router": "Router",
}

# Members the guides name on purpose though they are not public: how an engine or a front end works
# inside (docs/architecture.md, docs/front-ends.md).
INTERNAL = {"LmdbEngine.acquireReadTxn", "LoomServer.serve", "Router.dispatch"}

# Not members: a file name in code (`Routes.java:8`).
EXTENSIONS = {"java", "class", "jar", "md", "html", "xml", "conf", "sh", "py", "properties"}

# A fenced block in these languages is code that names the API.
CODE_LANGUAGES = {"java", ""}


def read(path):
    with open(path, encoding="utf-8") as f:
        return f.read()


class Reference:
    """The javadoc site: its types, and for each its members and whether each has a comment."""

    def __init__(self, root):
        self.root = root
        self.types = {}              # qualified name -> Type
        self.by_simple = defaultdict(list)   # "Page.Row", "Row" -> [Type]
        for directory, dirs, files in os.walk(root):
            dirs[:] = [d for d in dirs if d not in ("class-use", "resources", "script-dir", "legal")]
            for f in files:
                if not f.endswith(".html") or "-" in f or f[0].islower():
                    continue
                path = os.path.join(directory, f)
                package = os.path.relpath(directory, root).replace(os.sep, ".")
                name = f[:-len(".html")]
                t = Type(package, name, path)
                self.types[t.qualified] = t
                self.by_simple[name].append(t)
                if "." in name:
                    self.by_simple[name.rsplit(".", 1)[1]].append(t)

    def page(self, path):
        """The type whose page is at path (a file of the site)."""
        for t in self.types.values():
            if os.path.samefile(t.path, path):
                return t
        return None


DETAIL = re.compile(r'<section class="detail" id="([^"]*)">(.*?)</section>', re.S)
BLOCK = re.compile(r'<div class="block">(.*?)</div>', re.S)
GENERATED_ACCESSOR = re.compile(r"Returns the value of the <code>\w+</code> record component\.")
INHERITED = re.compile(r'<div class="inherited-list">\s*<h3 id="(?:methods|fields)-inherited-from-[^"]*">.*?<code>(.*?)</code>', re.S)
LINK = re.compile(r'<a href="([^"#]*)#([^"]*)"[^>]*>(\w+)</a>')


class Type:
    def __init__(self, package, name, path):
        self.package = package
        self.name = name                   # "Page.Row" for a nested type
        self.qualified = package + "." + name
        self.path = path
        self._members = None
        self._inherited = None
        self._documented = None

    def _load(self):
        text = read(self.path)
        description = text.split('<section class="class-description"', 1)[1].split("</section>", 1)[0] \
            if '<section class="class-description"' in text else ""
        self._documented = bool(BLOCK.search(description))
        self._members = defaultdict(list)  # name -> [(anchor, documented)]
        for anchor, body in DETAIL.findall(text):
            anchor = html.unescape(anchor)
            name = anchor.split("(", 1)[0]
            if name == "<init>":
                name = "new"
            self._members[name].append((anchor, member_documented(body)))
        self._inherited = defaultdict(list)  # name -> [(page href, anchor)]
        for links in INHERITED.findall(text):
            for href, anchor, name in LINK.findall(links):
                self._inherited[name].append((href, urllib.parse.unquote(html.unescape(anchor))))

    def documented(self):
        if self._documented is None:
            self._load()
        return self._documented

    def member(self, reference, name):
        """[(where, documented)] for every overload of name: declared here, or inherited; None if none."""
        if self._members is None:
            self._load()
        if name in self._members:
            return [(self.name + "." + anchor, ok) for anchor, ok in self._members[name]]
        found = []
        for href, anchor in self._inherited.get(name, []):
            if href.startswith("http"):
                found.append((href + "#" + anchor, True))     # the JDK's own, documented there
                continue
            owner = reference.page(os.path.join(os.path.dirname(self.path), href))
            if owner is None:
                continue
            owner_overloads = dict(owner.member(reference, name) or [])
            where = owner.name + "." + anchor
            found.append((where, owner_overloads.get(where, False)))
        return found or None


def member_documented(body):
    blocks = BLOCK.findall(body)
    text = " ".join(b for b in blocks if "descfrm-type-label" not in b)
    if not text.strip():
        return False
    # a record's accessor: javadoc's own sentence, which links the component's description (the
    # record's @param for it) when there is one, and names it bare when there is none
    return not GENERATED_ACCESSOR.fullmatch(text.strip())


# Code in a guide: inline spans outside fenced blocks, and fenced blocks in CODE_LANGUAGES.
FENCE = re.compile(r"^(\s*)```(\w*)\s*$")
INLINE = re.compile(r"``(.+?)``|`([^`\n]+)`")


def code_of(guide):
    """[(line number, code)] of a guide."""
    pieces = []
    fenced = None
    for number, line in enumerate(read(guide).splitlines(), 1):
        m = FENCE.match(line)
        if m:
            fenced = m.group(2) if fenced is None else None
            continue
        if fenced is not None:
            if fenced in CODE_LANGUAGES:
                pieces.append((number, line))
            continue
        for a, b in INLINE.findall(line):
            pieces.append((number, a or b))
    return pieces


TYPE_NAME = r"[A-Z]\w*(?:\.[A-Z]\w*)*"
DECLARATION = re.compile(r"\b(" + TYPE_NAME + r")\s*(?:<[^=;()]*?>)?\s+([a-z]\w*)\s*(?=[=:;,)])")
QUALIFIED = re.compile(r"\b((?:[a-z]\w*\.)+)(" + TYPE_NAME + r")(?:\.(\w+))?")
NEW = re.compile(r"\bnew\s+(" + TYPE_NAME + r")\s*[(<]")
ON_TYPE = re.compile(r"(?<![\w.])(" + TYPE_NAME + r")(?:\.([a-z_]\w*|[A-Z][A-Z0-9_]+)\b(\s*\()?)?")
ON_VARIABLE = re.compile(r"(?<![\w.])([a-z]\w*)\.([a-z]\w*)\s*\(")


class Check:
    def __init__(self, reference):
        self.reference = reference
        self.checked = set()
        self.failures = []

    def types(self, name):
        """The reference's types a name in code means: "Router" may be two."""
        found = [t for t in self.reference.by_simple.get(name, []) if t.name == name]
        if found:
            return found
        # a nested type by its own name (`Exchange`), or by its outer type's (`Page.Row`)
        return [t for t in self.reference.by_simple.get(name.rsplit(".", 1)[-1], []) if t.name.endswith("." + name)]

    def guide(self, path):
        code = code_of(path)
        variables = dict(RECEIVERS)
        for _, text in code:
            for type_name, variable in DECLARATION.findall(text):
                if self.types(type_name):
                    variables[variable] = type_name
        for number, text in code:
            where = "%s:%d" % (path, number)
            for package, type_name, member in QUALIFIED.findall(text):
                types = [t for t in self.types(type_name) if t.package == package.rstrip(".")]
                self.mention(types, member if member and member[0].islower() else None, where,
                             package + type_name)
            for type_name in NEW.findall(text):
                self.mention(self.types(type_name), "new", where, "new " + type_name)
            for m in ON_TYPE.finditer(text):
                if text[:m.start()].endswith("new "):
                    continue
                type_name, member = m.group(1), m.group(2)
                types = self.types(type_name)
                while not types and "." in type_name:     # Codec.STRING: a type, then a member
                    type_name, member = type_name.rsplit(".", 1)[0], type_name.rsplit(".", 1)[1]
                    types = self.types(type_name)
                self.mention(types, member, where, m.group(0).strip(" ("))
            for variable, member in ON_VARIABLE.findall(text):
                if variable in variables:
                    self.mention(self.types(variables[variable]), member, where,
                                 "%s.%s (%s %s)" % (variable, member, variables[variable], variable),
                                 guessed=variable in RECEIVERS and variables[variable] == RECEIVERS[variable])

    def mention(self, types, member, where, said, guessed=False):
        for t in types:
            if not t.documented():
                self.fail(where, said, t.qualified + " has no doc comment")
            self.checked.add(t.qualified)
            if member is None or member in EXTENSIONS or t.name + "." + member in INTERNAL:
                continue
            nested = self.reference.types.get(t.qualified + "." + member)
            if nested is not None:
                if not nested.documented():
                    self.fail(where, said, nested.qualified + " has no doc comment")
                self.checked.add(nested.qualified)
                continue
            overloads = t.member(self.reference, member)
            if overloads is None:
                # an interface has no constructor (new Filter() { ... }); a variable the guide does not
                # declare may be of another type than RECEIVERS guesses; a simple name may mean two types
                if member != "new" and not guessed and len(types) == 1:
                    self.fail(where, said, t.qualified + " has no public or protected member " + member)
                continue
            for anchor, ok in overloads:
                self.checked.add(anchor)
                if not ok:
                    self.fail(where, said, anchor + " has no doc comment")

    def fail(self, where, said, why):
        self.failures.append("%s: `%s`: %s" % (where, said, why))


def main(argv):
    if len(argv) < 3:
        sys.exit(__doc__)
    check = Check(Reference(argv[1]))
    for guide in argv[2:]:
        check.guide(guide)
    if check.failures:
        for line in sorted(set(check.failures)):
            print(line)
        print("check-api-docs: %d mentions in the guides lack a doc comment or name nothing" % len(set(check.failures)))
        return 1
    print("check-api-docs: the %d types and members the guides name are documented" % len(check.checked))
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv))
