"""The pages of a generated dump, drawn from the pools of its seed: articles, stubs, empty articles,
redirects, disambiguation pages and pages of other namespaces, and each page's XML with a drawn revision
(id, parent, timestamp, contributor, edit comment)."""

from __future__ import annotations

import itertools
import random
import time
from collections import deque
from collections.abc import Callable
from dataclasses import dataclass

from macaron_synthetic.lexicon.function_words import MONTHS
from macaron_synthetic.lexicon.tables import pairs, phrases
from macaron_synthetic.wiki.export_format import NAMESPACE_KEY, sha1_base36, xml_escape
from macaron_synthetic.wiki.markers import (
    MARK_DISAMBIGUATION,
    MARK_INTERWIKI,
    MARK_NAMESPACE,
    MARK_REDIRECT,
    MARK_TALK,
    article_word,
)
from macaron_synthetic.wiki.prose import LEADS, SIMPLE_STUB_LEADS, pools
from macaron_synthetic.wiki.vocabulary import Vocabulary, strip_accents


@dataclass
class Page:
    """A generated page: its kind, id, title, namespace and wikitext (``sentences``: prose sentences)."""

    kind: str
    page_id: int
    title: str
    ns: int
    text: str
    redirect: str | None = None
    sentences: int = 0
    model: str = "wikitext"
    fmt: str = "text/x-wiki"


_OTHER_NAMESPACE_TABLE = (
    "Category:30|Template:22|File:15|Wikipedia:8|Talk:6|Draft:5|Portal:4|User:3|Module:3|User talk:2|Help:2"
)
#: the namespaces of ``other_namespace`` pages, and how often each is drawn
_OTHER_NAMESPACES = {name: int(weight) for name, weight in pairs(phrases(_OTHER_NAMESPACE_TABLE))}
_EDIT_COMMENTS = (
    "/* History */ copyedit",
    "fixed typo",
    "Reverted edits by [[Special:Contribs/203.0.113.7|203.0.113.7]] ([[User talk:203.0.113.7|talk]]) "
    "to last version by $user",
    "Undid revision $rev by [[Special:Contributions/$user|$user]] ([[User talk:$user|talk]])",
    "[[WP:AWB|AWB]] general fixes & cleanup",
    'Added {{convert}} and "citation needed" tags',
    "/* References */ rm dead link",
    'Importing Wikidata [[Wikipedia:Short description|short description]]: "$Adj $noun"',
)


class PageGenerator:
    """Draws the pages of one dump from the pools of its seed."""

    def __init__(self, seed: int) -> None:
        self.rng = random.Random(seed)
        self.p = pools(seed)
        self.v = Vocabulary(seed, self.rng)
        self.titles: set[str] = set()
        self.recent: deque[str] = deque(maxlen=2000)
        users = [f"{self.v.pick('first')}{self.v.pick('surname')}" for _ in range(300)]
        users += ["Tom&Jerry", "Citation bot", "Monkbot", "InternetArchiveBot", "Ser Amantio di Nicolao"]
        self.users = users
        self._ns_names = list(_OTHER_NAMESPACES)
        self._ns_cum = list(itertools.accumulate(_OTHER_NAMESPACES.values()))

    # ---- titles
    def _unique(self, make: Callable[[], str]) -> str:
        title = make()
        for attempt in range(20):
            if title not in self.titles:
                break
            title = make() if attempt < 10 else f"{title} ({self.v.fill('$adj $noun')})"
        else:
            title = f"{title} ({len(self.titles)})"
        self.titles.add(title)
        return title

    def _article_title(self, kind: str) -> str:
        v, r = self.v, self.rng
        if kind == "person":
            return v.person()
        if kind == "place":
            place = v.pick("place")
            return place if r.random() < 0.6 else f"{place}, {v.pick('country')}"
        if kind == "building":
            place = v.pick("place")
            church = f"St. {v.pick('first')}'s Church, {place}"
            return r.choice((church, f"{place} railway station", f"{place} Castle", f"{place} Bridge"))
        if kind == "species":
            genus = strip_accents(v.pick("surname")).replace("'", "").replace(" ", "").capitalize()
            return f"{genus}ia {v.pick('noun')}ensis"
        if kind == "work":
            title = v.fill("The $Adj $Noun")
            return title + r.choice(("", " (film)", " (novel)", f" ({r.randint(1950, 2024)} film)"))
        if kind == "org":
            return f"{v.pick('place')} & {v.pick('place')} Railway"
        return f"Battle of {v.pick('place')}"

    # ---- the pieces of an article
    def _prose(self, n: int) -> str:
        return " ".join(self.rng.choices(self.p.sentences, k=n))

    def _categories(self) -> str:
        cats = self.rng.sample(self.p.categories, self.rng.randint(1, 6))
        return "\n".join(cats)

    def _lead(self, title: str, topic: str, simple: bool = False) -> str:
        templates = SIMPLE_STUB_LEADS if simple else LEADS[topic]
        return self.v.fill_prose(self.rng.choice(templates).replace("$title", title))

    def article(self, page_id: int) -> Page:
        r, p = self.rng, self.p
        topic = r.choice(tuple(LEADS))
        title = self._unique(lambda: self._article_title(topic))
        self.recent.append(title)
        parts: list[str] = []
        if r.random() < 0.9:
            parts.append(r.choice(p.short_descriptions))
        if r.random() < 0.4:
            parts.append(f"{{{{Use dmy dates|date={r.choice(MONTHS)} {r.randint(2010, 2025)}}}}}")
        if r.random() < 0.15:
            parts.append(r.choice(p.templates))
        if r.random() < 0.6:
            parts.append(r.choice(p.infoboxes[topic]))
        if r.random() < 0.05:
            parts.append("__NOTOC__")
        n_lead = r.randint(1, 6)
        sentences = 1 + n_lead
        ref_name = f"{strip_accents(self.v.pick('surname'))}{r.randint(1900, 2024)}".replace("'", "")
        if r.random() < 0.6:
            ref_name = f'"{ref_name}"'  # quoted or not, as editors write them
        named = r.random() < 0.5
        lead = self._lead(title, topic) + " " + self._prose(n_lead)
        if named:
            ref = r.choice(p.refs)
            lead += f"<ref name={ref_name}>{ref[ref.index('>') + 1 :]}"
        parts.append(lead)
        if r.random() < 0.3:
            n = r.randint(2, 5)
            sentences += n
            parts.append(self._prose(n))
        for _ in range(min(int(r.expovariate(0.35)) + 1, 12)):
            parts.append(f"== {r.choice(p.headings)} ==")
            if r.random() < 0.3:
                parts.append(r.choice(p.templates))
            if r.random() < 0.3:
                parts.append(r.choice(p.files))
            for _ in range(r.randint(1, 4)):
                n = r.randint(2, 8)
                sentences += n
                para = self._prose(n)
                x = r.random()
                if named and x < 0.3:
                    para += f"<ref name={ref_name} />"
                elif x < 0.4:
                    para += " " + r.choice(p.comments)
                parts.append(para)
            x = r.random()
            if x < 0.25:
                parts.append(r.choice(p.lists))
            elif x < 0.38:
                parts.append(r.choice(p.tables))
            elif x < 0.46:
                parts.append(r.choice(p.definitions))
            elif x < 0.5:
                parts.append(r.choice(p.galleries))
            elif x < 0.58:
                parts.append(r.choice(p.comments))
            if r.random() < 0.25:
                parts.append(f"=== {r.choice(p.headings)} ===")
                n = r.randint(2, 6)
                sentences += n
                parts.append(self._prose(n))
        parts.extend(self._appendix())
        text = "\n\n".join(parts).replace("\x00", article_word(page_id))
        return Page("article", page_id, title, 0, text, sentences=sentences)

    def _appendix(self) -> list[str]:
        r, p = self.rng, self.p
        parts = []
        if r.random() < 0.3:
            see_also = r.choice(p.lists)
            if r.random() < 0.3:
                see_also = "{{div col|colwidth=22em}}\n" + see_also + "\n{{div col end}}"
            parts.append("== See also ==\n" + see_also)
        if r.random() < 0.1:
            parts.append("== Notes ==\n{{notelist}}")
        x = r.random()
        if x < 0.75:
            parts.append(
                "== References ==\n" + r.choice(("{{Reflist}}", "<references />", "{{Reflist|30em}}"))
            )
        elif x < 0.85:  # list-defined references
            defined = "\n".join(
                f'<ref name="{strip_accents(self.v.pick("surname"))}{r.randint(1900, 2024)}">'
                + ref[ref.index(">") + 1 :]
                for ref in r.sample(p.refs, 2)
            )
            opener, closer = r.choice((("{{Reflist|refs=", "}}"), ("<references>", "</references>")))
            parts.append(f"== References ==\n{opener}\n{defined}\n{closer}")
        if r.random() < 0.1:
            parts.append("== Further reading ==\n" + r.choice(p.lists))
        if r.random() < 0.6:
            parts.append("== External links ==\n" + "\n".join(r.sample(p.externals, r.randint(1, 3))))
        tail = []
        if r.random() < 0.3:
            tail.append(r.choice(p.templates))
        if r.random() < 0.3:
            tail.append("{{Authority control}}")
        if r.random() < 0.2:
            tail.append(self.v.fill("{{DEFAULTSORT:$surname, $first}}"))
        tail.append(self._categories())
        if r.random() < 0.05:
            tail.append(f"[[fr:{MARK_INTERWIKI} {self.v.fill('$Noun $place')}]]")
        parts.append("\n".join(tail))
        return parts

    def stub(self, page_id: int) -> Page:
        r, v = self.rng, self.v
        topic = r.choice(("person", "place"))
        title = self._unique(lambda: self._article_title(topic).replace(".", ""))
        self.recent.append(title)
        parts = []
        if r.random() < 0.5:
            parts.append(r.choice(self.p.infoboxes[topic]))
        lead = self._lead(title, topic, simple=True)
        if r.random() < 0.5:
            lead += r.choice(self.p.refs)
        parts.append(lead)
        parts.append("== References ==\n{{Reflist}}")
        categories = self._categories()
        stub_template = v.fill(r.choice(("{{$country-geo-stub}}", "{{$nationality-bio-stub}}")))
        parts.append(f"{categories}\n\n{stub_template}")
        text = "\n\n".join(parts).replace("\x00", article_word(page_id))
        return Page("stub", page_id, title, 0, text, sentences=1)

    def empty(self, page_id: int) -> Page:
        r, p = self.rng, self.p
        title = self._unique(lambda: self.v.fill("List of $nouns in $place"))
        parts = [r.choice(p.short_descriptions), r.choice(p.infoboxes[r.choice(("place", "building"))])]
        for _ in range(r.randint(1, 3)):
            parts.append(f"== {r.choice(p.headings)} ==")
            parts.append(r.choice(p.tables) if r.random() < 0.5 else r.choice(p.lists))
        parts.append("== References ==\n{{Reflist}}")
        parts.append(r.choice(p.templates) + "\n" + self._categories())
        return Page("empty", page_id, title, 0, "\n\n".join(parts))

    def redirect(self, page_id: int) -> Page:
        r, v = self.rng, self.v
        target = r.choice(self.recent) if self.recent else self._article_title("place")

        def variant() -> str:
            x = r.random()
            if x < 0.25:
                return strip_accents(target) if strip_accents(target) != target else target.upper()
            if x < 0.5:
                return target[:1] + target[1:].lower()
            if x < 0.6:
                return "The " + target
            return self._article_title(r.choice(tuple(LEADS)))

        title = self._unique(variant)
        link = target if r.random() < 0.8 else f"{target}#{v.pick('heading')}"
        keyword = r.choice(("#REDIRECT [[", "#REDIRECT [[", "#REDIRECT[[", "#redirect [["))
        rcat = r.choice(
            (
                "{{Rcat shell|\n{{R from move}}\n}}",
                "{{R from alternative spelling}}",
                "{{Redirect category shell|\n{{R from other capitalisation}}\n{{R printworthy}}\n}}",
            )
        )
        text = f"{keyword}{link}]]\n\n{rcat}\n{MARK_REDIRECT} note: {v.fill('$adj $noun of $place')}."
        return Page("redirect", page_id, title, 0, text, redirect=target)

    def disambiguation(self, page_id: int) -> Page:
        r, v, m = self.rng, self.v, MARK_DISAMBIGUATION
        style = r.choice(("plain", "plain", "surname", "hndis", "geodis"))
        if style == "hndis":
            base = v.person()
        elif style == "geodis":
            base = v.pick("place")
        elif style == "surname":
            base = v.pick("surname")
        else:
            base = v.fill("$Noun $place")
        title = self._unique(lambda: base if base not in self.titles else f"{base} (disambiguation)")
        lines = [f"'''{base}''' may refer to the following {m} topics:", ""]
        if style in ("plain", "geodis"):
            lines.append(f"== {m} Places ==")
            for _ in range(r.randint(2, 5)):
                lines.append(v.fill(f"* [[{base}, $country]], a $adj town {m}"))
        if style in ("plain", "surname", "hndis"):
            lines.append(f"== {m} People ==")
            surname = base.split()[-1]
            for _ in range(r.randint(2, 5)):
                lines.append(v.fill(f"* [[$first {surname}]] ($yrange), $nationality $occupation {m}"))
        if style == "plain":
            lines.append(f"== {m} Arts ==")
            lines.append(v.fill(f"* ''[[{base} (film)]]'', a $year $nationality film {m}"))
            lines.append(v.fill(f"* ''[[{base} (album)|{base}]]'' (album), by [[$person]] {m}"))
        lines += ["", "== See also ==", f"* {{{{lookfrom|{base}}}}} {m}", f"* {{{{intitle|{base}}}}} {m}", ""]

        templates = {
            "plain": "{{Disambiguation}}",
            "surname": "{{Disambiguation|surname}}",
            "geodis": "{{geodis}}",
        }
        lines.append(templates.get(style) or f"{{{{hndis|{base.split()[-1]}, {base.split()[0]}}}}}")
        return Page("disambiguation", page_id, title, 0, "\n".join(lines))

    def other_namespace(self, page_id: int) -> Page:
        r, v, p = self.rng, self.v, self.p
        ns_name = r.choices(self._ns_names, cum_weights=self._ns_cum)[0]
        mark = MARK_TALK if "alk" in ns_name else MARK_NAMESPACE
        model, fmt = "wikitext", "text/x-wiki"

        def prose(n: int) -> str:
            return " ".join(r.choices(p.sentences, k=n)).replace("\x00", mark)

        if ns_name in ("Talk", "User talk"):
            base = r.choice(self.recent) if ns_name == "Talk" and self.recent else r.choice(self.users)
            user = r.choice(self.users)
            when = time.gmtime(r.randint(1_080_000_000, 1_790_000_000))
            stamp = time.strftime(f"%H:%M, {when.tm_mday} %B %Y", when)
            sig = f"[[User:{user}|{user}]] ([[User talk:{user}|talk]]) {stamp} (UTC)"
            banner = "{{WikiProject banner shell|class=Start|\n{{WikiProject $topic|importance=low}}\n}}\n\n"
            text = (
                v.fill(banner)
                + f"== {MARK_TALK} {v.fill('$Adj $noun')} ==\n{prose(r.randint(2, 5))} {sig}\n"
                + f":{prose(r.randint(1, 3))} ~~~~\n::{MARK_TALK} {v.fill('Agreed, the $noun is $adj.')} ~~~~"
            )
        elif ns_name == "User":
            base = r.choice(self.users)
            text = (
                "{{User en}}\n{{User en-N}}\n"
                + f"Hello! I am a {MARK_NAMESPACE} editor interested in {v.fill('$nouns and $nouns')}.\n\n"
                + f"== {MARK_NAMESPACE} Articles I have started ==\n"
                + f"* [[{r.choice(self.recent) if self.recent else 'Sandbox'}]] {MARK_NAMESPACE}"
            )
        elif ns_name == "Template":
            base = v.fill("$Noun $place navbox")
            text = (
                "{{Navbox\n| name = {{subst:PAGENAME}}\n"
                + f"| title = {MARK_NAMESPACE} [[{v.pick('place')}]]\n"
                + f"| list1 = {{{{{{1|}}}}}} [[{v.pick('place')}]]\n}}}}<noinclude>\n{{{{Documentation}}}}\n"
                + f"[[Category:{MARK_NAMESPACE} Navigational boxes]]\n</noinclude>"
            )
        elif ns_name == "Category":
            base = v.fill("$Adj $nouns in $place")
            text = (
                f"{{{{Commons category|{base}}}}}\n{{{{Cat main|{v.pick('place')}}}}}\n"
                + f"This category contains {MARK_NAMESPACE} articles about {v.fill('$adj $nouns')}.\n\n"
                + f"[[Category:{MARK_NAMESPACE} {v.fill('$Nouns by country')}]]"
            )
        elif ns_name == "File":
            base = v.fill("$place $noun $year.jpg")
            text = (
                "== Summary ==\n{{Information\n"
                + f"|description={{{{en|1={MARK_NAMESPACE} {v.fill('The $adj $noun of $place.')}}}}}\n"
                + f"|date={v.date()}\n|source={{{{own}}}}\n|author=[[User:{r.choice(self.users)}]]\n}}}}\n\n"
                + "== Licensing ==\n{{self|cc-by-sa-4.0}}"
            )
        elif ns_name == "Module":
            base = v.fill("$Noun")
            model, fmt = "Scribunto", "text/plain"
            text = (
                f"-- {MARK_NAMESPACE}: helpers for the {{{{{base.lower()}}}}} template\n"
                + "local p = {}\n\nfunction p.main(frame)\n\tlocal args = frame.args\n"
                + '\tif args[1] == nil or #args[1] < 1 then\n\t\treturn "<span class=\\"error\\">'
                + f'{MARK_NAMESPACE} & no input</span>"\n\tend\n'
                + '\treturn args[1] .. " &gt; " .. (args[2] or "")\n'
                + "end\n\nreturn p\n"
            )
        elif ns_name == "Draft":
            base = v.fill("$Adj $Noun of $place")
            text = (
                "{{AfC submission|||ts=20240101000000|u="
                + r.choice(self.users)
                + "|ns=118}}\n"
                + f"'''{base}''' is a {MARK_NAMESPACE} draft. {prose(r.randint(2, 6))}\n\n"
                + f"== {MARK_NAMESPACE} History ==\n{prose(r.randint(2, 6))}\n\n"
                + "== References ==\n{{Reflist}}"
            )
        else:  # Wikipedia, Portal, Help
            base = v.fill("$Adj $nouns") if ns_name != "Portal" else v.pick("place")
            text = (
                "{{Wikipedia how-to|WP:"
                + base.upper()[:6].replace(" ", "")
                + "}}\n"
                + f"{prose(r.randint(2, 5))}\n\n== {MARK_NAMESPACE} {v.fill('$Adj $nouns')} ==\n"
                + "\n".join(f"* {MARK_NAMESPACE} {v.fill('$adj $noun')}" for _ in range(3))
            )
        title = self._unique(lambda: f"{ns_name}:{base}" if base else f"{ns_name}:{v.fill('$Noun')}")
        return Page("other_namespace", page_id, title, NAMESPACE_KEY[ns_name], text, model=model, fmt=fmt)

    # ---- the XML of a page
    def page_xml(self, page: Page) -> str:
        r = self.rng
        rev = r.randint(900_000_000, 1_320_000_000)
        parent = f"      <parentid>{rev - r.randint(1, 5_000_000)}</parentid>\n" if r.random() < 0.93 else ""
        ts = time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime(r.randint(1_100_000_000, 1_790_000_000)))
        if r.random() < 0.1:
            contributor = f"        <ip>203.0.113.{r.randint(1, 254)}</ip>\n"
        else:
            contributor = (
                f"        <username>{xml_escape(r.choice(self.users))}</username>\n"
                f"        <id>{r.randint(1, 48_000_000)}</id>\n"
            )
        minor = "      <minor/>\n" if r.random() < 0.25 else ""
        comment = ""
        if r.random() < 0.85:
            c = r.choice(_EDIT_COMMENTS).replace("$user", r.choice(self.users)).replace("$rev", str(rev - 7))
            comment = f"      <comment>{xml_escape(self.v.fill(c))}</comment>\n"
        redirect = (
            f'    <redirect title="{xml_escape(page.redirect)}" />\n' if page.redirect is not None else ""
        )
        text = page.text
        sha1 = sha1_base36(text)
        return (
            f"  <page>\n    <title>{xml_escape(page.title)}</title>\n    <ns>{page.ns}</ns>\n"
            f"    <id>{page.page_id}</id>\n{redirect}    <revision>\n      <id>{rev}</id>\n{parent}"
            f"      <timestamp>{ts}</timestamp>\n      <contributor>\n{contributor}      </contributor>\n"
            f"{minor}{comment}      <origin>{rev}</origin>\n      <model>{page.model}</model>\n"
            f"      <format>{page.fmt}</format>\n"
            f'      <text bytes="{len(text.encode("utf-8"))}" sha1="{sha1}" xml:space="preserve">'
            f"{xml_escape(text)}</text>\n      <sha1>{sha1}</sha1>\n    </revision>\n  </page>\n"
        )

    def page(self, kind: str, page_id: int) -> Page:
        """A page of one of :data:`~macaron_synthetic.wiki.dump.KINDS`."""
        return getattr(self, kind)(page_id)
