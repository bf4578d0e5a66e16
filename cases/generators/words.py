"""Built-in word lists and value makers for realistic-looking spreadsheet cells.

Every maker takes a ``random.Random`` first so a case is reproducible from its seed. Values
are invented: phone numbers use the 555 exchange, e-mail domains are made up, and street,
company and product names are combinations of common words.
"""
from __future__ import annotations

import random

FIRST = (
    "Alice", "Bruno", "Chen", "Dana", "Elena", "Farid", "Grace", "Hiro", "Ines", "Jamal",
    "Kate", "Luis", "Maya", "Nikhil", "Olga", "Pedro", "Quinn", "Rosa", "Samir", "Tara",
    "Umar", "Vera", "Wes", "Ximena", "Yusuf", "Zoe", "Aaron", "Bianca", "Carlos", "Diane",
    "Ethan", "Fatima", "George", "Hannah", "Ivan", "Julia", "Kwame", "Leah", "Marco", "Nora",
)
LAST = (
    "Adams", "Baker", "Castillo", "Dubois", "Evans", "Fischer", "Garcia", "Huang", "Ibrahim",
    "Jensen", "Kowalski", "Lopez", "Morgan", "Nguyen", "Okafor", "Patel", "Quinlan", "Rossi",
    "Schmidt", "Tanaka", "Underwood", "Varga", "Walsh", "Xu", "Yilmaz", "Zimmerman", "Brooks",
    "Carter", "Delgado", "Foster", "Hughes", "Kim", "Moreau", "Novak", "O'Brien", "Price",
    "Reyes", "Singh", "Torres", "Wright",
)
COMPANY_WORDS = (
    "Acme", "Blue Ridge", "Cedar", "Summit", "Northwind", "Pioneer", "Harbor", "Granite",
    "Maple Leaf", "Silverline", "Redwood", "Brightside", "Keystone", "Lakeshore", "Ironwood",
    "Evergreen", "Sterling", "Westfield", "Crescent", "Oakmont",
)
COMPANY_SUFFIX = ("Inc.", "LLC", "Corp.", "Group", "Partners", "Supply", "Logistics", "Foods")
# (city, state, first three digits of its ZIP codes)
CITIES = (
    ("Portland", "OR", "972"), ("Austin", "TX", "787"), ("Denver", "CO", "802"),
    ("Columbus", "OH", "432"), ("Raleigh", "NC", "276"), ("Madison", "WI", "537"),
    ("Tucson", "AZ", "857"), ("Boise", "ID", "837"), ("Albany", "NY", "122"),
    ("Omaha", "NE", "681"), ("Spokane", "WA", "992"), ("Savannah", "GA", "314"),
    ("Richmond", "VA", "232"), ("Fresno", "CA", "937"), ("Dayton", "OH", "454"),
    ("Little Rock", "AR", "722"), ("Salt Lake City", "UT", "841"), ("Des Moines", "IA", "503"),
    ("Burlington", "VT", "054"), ("Santa Fe", "NM", "875"), ("Lexington", "KY", "405"),
    ("Charleston", "SC", "294"),
)
STREETS = (
    "Maple", "Oak", "Pine", "Cedar", "Elm", "Washington", "Lincoln", "Park", "Lake", "Hill",
    "Sunset", "River", "Highland", "Church", "Mill", "Franklin", "Jefferson", "Willow",
)
STREET_TYPES = ("St", "Ave", "Rd", "Blvd", "Ln", "Dr", "Way", "Ct")
DEPARTMENTS = (
    "Sales", "Marketing", "Finance", "Engineering", "Operations", "Legal", "Support",
    "Human Resources", "Purchasing", "Research",
)
JOB_TITLES = (
    "Analyst", "Manager", "Director", "Engineer", "Coordinator", "Specialist", "Associate",
    "Consultant", "Accountant", "Technician",
)
REGIONS = ("North", "South", "East", "West", "Central", "Northeast", "Southwest", "Pacific")
PRODUCTS = (
    "Desk Lamp", "Office Chair", "Monitor Arm", "USB-C Hub", "Standing Desk", "Bookshelf",
    "Wireless Mouse", "Keyboard", "Filing Cabinet", "Whiteboard", "Printer Paper", "Stapler",
    "Webcam", "Headset", "Laptop Stand", "Desk Organizer", "Label Maker", "Paper Shredder",
)
COLORS = ("Black", "White", "Silver", "Blue", "Red", "Green", "Gray", "Walnut")
MONTHS = ("Jan", "Feb", "Mar", "Apr", "May", "Jun", "Jul", "Aug", "Sep", "Oct", "Nov", "Dec")
MONTH_NAMES = (
    "January", "February", "March", "April", "May", "June", "July", "August", "September",
    "October", "November", "December",
)
TITLE_ADJ = (
    "Silent", "Golden", "Broken", "Hidden", "Last", "Distant", "Crimson", "Quiet", "Endless",
    "Forgotten", "Winter", "Electric", "Paper", "Midnight",
)
TITLE_NOUN = (
    "Harbor", "Garden", "Empire", "River", "Letters", "Station", "Orchard", "Signal", "Horizon",
    "Mirror", "Kingdom", "Lighthouse", "Summer", "Archive",
)
SUBJECTS = ("Math", "Science", "History", "English", "Art", "Music", "Spanish", "Biology")
TAGS = ("sale", "new", "bestseller", "clearance", "eco", "bulk", "gift", "limited", "online-only")
STATUSES = ("Open", "Closed", "Pending", "Shipped", "Returned", "On Hold")


def full_name(rng: random.Random) -> str:
    return f"{rng.choice(FIRST)} {rng.choice(LAST)}"


def names(rng: random.Random, n: int) -> list[tuple[str, str]]:
    """``n`` distinct (first, last) pairs."""
    seen: set[tuple[str, str]] = set()
    out = []
    while len(out) < n:
        pair = (rng.choice(FIRST), rng.choice(LAST))
        if pair not in seen:
            seen.add(pair)
            out.append(pair)
    return out


def distinct(rng: random.Random, pool: tuple[str, ...], n: int) -> list[str]:
    return rng.sample(list(pool), n)


def company(rng: random.Random) -> str:
    return f"{rng.choice(COMPANY_WORDS)} {rng.choice(COMPANY_SUFFIX)}"


def domain(rng: random.Random) -> str:
    word = rng.choice(COMPANY_WORDS).lower().replace(" ", "")
    return f"{word}{rng.choice(('', 'co', 'mail', 'corp'))}.{rng.choice(('com', 'net', 'org', 'io'))}"


def email(rng: random.Random, first: str, last: str) -> str:
    first, last = first.lower(), last.lower().replace("'", "")
    local = rng.choice((f"{first}.{last}", f"{first[0]}{last}", f"{first}_{last}", f"{first}{rng.randint(1, 99)}"))
    return f"{local}@{domain(rng)}"


def phone(rng: random.Random, style: str | None = None) -> str:
    area = rng.choice((503, 512, 303, 614, 919, 608, 520, 208, 518, 402, 509, 912, 804))
    line = f"{rng.randint(100, 199):04d}"
    style = style or rng.choice(("paren", "dash", "dot"))
    if style == "paren":
        return f"({area}) 555-{line}"
    if style == "dot":
        return f"{area}.555.{line}"
    return f"{area}-555-{line}"


def street_address(rng: random.Random) -> str:
    return f"{rng.randint(10, 9899)} {rng.choice(STREETS)} {rng.choice(STREET_TYPES)}"


def city(rng: random.Random) -> tuple[str, str, str]:
    return rng.choice(CITIES)


def zip_code(rng: random.Random, zip3: str) -> str:
    return f"{zip3}{rng.randint(1, 99):02d}"


def amount(rng: random.Random, lo: float, hi: float, thousands: bool = True) -> str:
    """A money amount with two decimals, e.g. "1,234.50" (no currency sign)."""
    cents = rng.randint(int(lo * 100), int(hi * 100))
    value = cents / 100
    return f"{value:,.2f}" if thousands else f"{value:.2f}"


def count(rng: random.Random, lo: int, hi: int, thousands: bool = True) -> str:
    n = rng.randint(lo, hi)
    return f"{n:,}" if thousands else str(n)


def ymd(rng: random.Random, years: tuple[int, int] = (2019, 2024)) -> tuple[int, int, int]:
    return rng.randint(*years), rng.randint(1, 12), rng.randint(1, 28)


def fmt_date(d: tuple[int, int, int], fmt: str) -> str:
    """Formats: iso 2021-03-15, us 03/15/2021, short 3/15/2021, long March 15, 2021,
    abbr Mar 15, 2021, dmy 15 Mar 2021."""
    y, m, day = d
    if fmt == "iso":
        return f"{y:04d}-{m:02d}-{day:02d}"
    if fmt == "us":
        return f"{m:02d}/{day:02d}/{y:04d}"
    if fmt == "short":
        return f"{m}/{day}/{y}"
    if fmt == "long":
        return f"{MONTH_NAMES[m - 1]} {day}, {y}"
    if fmt == "abbr":
        return f"{MONTHS[m - 1]} {day}, {y}"
    if fmt == "dmy":
        return f"{day} {MONTHS[m - 1]} {y}"
    raise ValueError(f"unknown date format {fmt!r}")


def title(rng: random.Random) -> str:
    words = [rng.choice(TITLE_ADJ), rng.choice(TITLE_NOUN)]
    if rng.random() < 0.4:
        words = ["The"] + words
    if rng.random() < 0.25:
        words += ["of", rng.choice(CITIES)[0]]
    return " ".join(words)


def product_code(rng: random.Random, seg: tuple[int, int, int], sep: str = "-") -> str:
    """A code like HW-2041-BLK with segment lengths ``seg`` (letters, digits, letters)."""
    letters = "ABCDEFGHJKLMNPRSTUVWXZ"
    a = "".join(rng.choice(letters) for _ in range(seg[0]))
    b = "".join(rng.choice("0123456789") for _ in range(seg[1]))
    c = "".join(rng.choice(letters) for _ in range(seg[2]))
    return sep.join((a, b, c))


def quarters(start_year: int, n: int) -> list[str]:
    out = []
    q, y = 1, start_year
    for _ in range(n):
        out.append(f"Q{q} {y}")
        q, y = (1, y + 1) if q == 4 else (q + 1, y)
    return out


def employee(rng: random.Random, first: str | None = None, last: str | None = None) -> dict[str, str]:
    """One coherent staff record (the e-mail matches the name) with every column we use."""
    if first is None or last is None:
        first, last = names(rng, 1)[0]
    town, state, _ = city(rng)
    return {
        "Employee ID": f"E{rng.randint(1000, 9999)}",
        "Name": f"{first} {last}",
        "First": first,
        "Last": last,
        "Email": email(rng, first, last),
        "Phone": phone(rng),
        "City": town,
        "State": state,
        "Department": rng.choice(DEPARTMENTS),
        "Title": rng.choice(JOB_TITLES),
        "Hire Date": fmt_date(ymd(rng, (2008, 2024)), "iso"),
        "Salary": f"{rng.randint(42, 165) * 1000:,}",
        "Notes": rng.choice(("", "remote", "on leave", "part-time", "contractor", "relocating")),
    }


def staff_table(rng: random.Random, cols: list[str], n: int) -> list[list[str]]:
    """A header row plus ``n`` employee rows with distinct names."""
    records = [employee(rng, f, l) for f, l in names(rng, n)]
    return [list(cols)] + [[r[c] for c in cols] for r in records]
