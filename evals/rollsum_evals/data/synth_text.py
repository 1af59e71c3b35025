"""Word pools for the synthetic generator, kept apart from the generation logic.

Distractor text deliberately avoids digits and proper names, so that a planted value
("Priya Raman", "4417", "INC-20931") is found in a context only where it was planted.
Everything here is a tuple: iteration order is fixed, so a seed gives the same text everywhere.
"""

from __future__ import annotations

FIRST_NAMES = ("Priya", "Tomasz", "Amara", "Jonas", "Keiko", "Mateo", "Ingrid", "Rafael", "Leila", "Dmitri",
               "Siobhan", "Kwame", "Noor", "Henrik", "Valentina", "Oluwaseun", "Mei", "Anders", "Yasmin",
               "Bartholomew", "Chiara", "Tariq", "Freya", "Desmond", "Ines", "Hamish", "Zofia", "Kenji",
               "Marisol", "Ezekiel")
LAST_NAMES = ("Raman", "Kowalczyk", "Okafor", "Lindqvist", "Tanaka", "Alvarez", "Halvorsen", "Moreau",
              "Haddad", "Volkov", "Gallagher", "Mensah", "Siddiqui", "Brandt", "Rossi", "Adeyemi", "Zhou",
              "Norberg", "Farouk", "Whitcombe", "Esposito", "Qureshi", "Aldridge", "Pemberton", "Carvalho",
              "MacLeod", "Wisniewska", "Morimoto", "Quintero", "Abernathy")
CITIES = ("Lisbon", "Reykjavik", "Montevideo", "Ljubljana", "Tbilisi", "Valparaiso", "Kraków", "Hobart",
          "Marrakesh", "Tallinn", "Cartagena", "Kyoto", "Bergen", "Porto", "Antwerp", "Oaxaca", "Zanzibar",
          "Innsbruck", "Galway", "Salzburg", "Queenstown", "Bratislava", "Cusco", "Dubrovnik", "Seville",
          "Trondheim", "Halifax", "Penang", "Bologna", "Edinburgh")
MONTHS = ("January", "February", "March", "April", "May", "June", "July", "August", "September",
          "October", "November", "December")
ID_PREFIXES = ("INC", "ORD", "CLM", "BK", "REF", "TKT", "APP", "INV")
TIMES = ("6:45 pm", "7:15 pm", "7:30 pm", "8:00 pm", "8:15 pm", "8:45 pm", "9:10 pm", "5:50 pm", "6:20 pm",
         "9:40 pm", "10:05 am", "11:20 am", "12:35 pm", "1:55 pm", "3:25 pm")

# (relation, question) for people facts
RELATIONS = ("sister-in-law", "landlord", "dentist", "new manager", "upstairs neighbour", "piano teacher",
             "accountant", "college roommate", "physiotherapist", "cousin", "daughter's teacher",
             "wedding planner", "realtor", "vet", "mentor", "book club host", "mechanic", "therapist",
             "running coach", "tax advisor")
EVENT_PLACES = ("sister's wedding", "company offsite", "summer holiday", "design conference",
                "family reunion", "friend's bachelor weekend", "marathon", "cooking course",
                "anniversary trip", "photography workshop", "language exchange", "yoga retreat")
NUMBER_THINGS = ("gym locker combination", "new apartment number", "bike lock code",
                 "parking spot number", "storage unit number", "alarm system code",
                 "library card PIN", "monthly grocery budget in euros", "kitchen renovation quote in euros",
                 "seat number for the concert", "mailbox number", "office door code")
ID_THINGS = (("order for the standing desk", "ORD"), ("insurance claim for the cracked phone", "CLM"),
             ("support ticket with the internet provider", "INC"), ("car rental booking", "BK"),
             ("passport renewal application", "APP"), ("hotel reservation", "REF"),
             ("train tickets", "TKT"), ("invoice from the electrician", "INV"),
             ("return of the broken blender", "ORD"), ("warranty claim for the washing machine", "CLM"))
DATE_EVENTS = ("dentist appointment", "mother's birthday", "lease renewal deadline", "flight home",
               "job interview", "vaccination appointment", "driving test", "tax filing deadline",
               "parent-teacher meeting", "housewarming party", "moving day", "concert")
DECISIONS = (("holiday destination", CITIES),
             ("new laptop", ("ThinkPad X1", "MacBook Air", "Framework 13", "Dell XPS 13", "Surface Laptop")),
             ("paint colour for the living room", ("sage green", "terracotta", "dusty blue", "warm ivory",
                                                   "charcoal grey", "mustard yellow")),
             ("restaurant for the birthday dinner", ("Casa Olivia", "The Copper Pot", "Sakura House",
                                                     "Bistro Lumière", "Trattoria Nonna", "The Green Fig")),
             ("name for the puppy", ("Biscuit", "Juniper", "Waffles", "Pepper", "Moose", "Clementine")),
             ("streaming service to keep", ("Netflix", "Disney Plus", "HBO Max", "Apple TV")),
             ("new car", ("Skoda Octavia", "Toyota Corolla", "Kia Niro", "Volvo V60", "Mazda 3")),
             ("sofa for the new flat", ("the corduroy sectional", "the green velvet one", "the leather loveseat",
                                        "the modular grey sofa")))
SUPERSEDED = (("dinner reservation time", "time"), ("gate for the flight", "gate"),
              ("date of the housewarming", "date"), ("budget for the trip in euros", "number"),
              ("meeting point for the hike", "place"), ("contractor's start date", "date"),
              ("pickup time for the airport shuttle", "time"), ("locker combination at the pool", "number"))
PREFERENCES = (("favourite tea", ("Earl Grey", "jasmine green tea", "rooibos", "lapsang souchong", "chamomile")),
               ("favourite cuisine", ("Ethiopian", "Peruvian", "Sichuan", "Lebanese", "Georgian")),
               ("preferred airline seat", ("window seat", "aisle seat")),
               ("favourite band", ("Khruangbin", "Fleetwood Mac", "Radiohead", "Nina Simone", "ABBA")),
               ("dietary restriction", ("pescatarian", "lactose intolerant", "gluten free", "vegan")),
               ("favourite running route", ("the canal path", "the river loop", "the old railway trail")))

CHAT_TOPICS: tuple[tuple[tuple[str, ...], tuple[str, ...]], ...] = (
    (("The weather has been so strange this week, sunny one minute and pouring the next.",
      "I keep forgetting my umbrella at the office.",
      "Honestly the grey skies are starting to get to me a little.",
      "Do you think it's worth getting one of those daylight lamps?",
      "I went for a walk anyway and came back soaked.",
      "At least the garden is happy about all the rain."),
     ("Changeable weather like that can be draining, especially when it disrupts your routine.",
      "A small habit like keeping a spare umbrella by the door can save a lot of hassle.",
      "Daylight lamps help some people during darker months; using one in the morning tends to work best.",
      "Getting outside even when it's grey still counts, and fresh air often lifts the mood.",
      "If the dreary days are affecting you, planning something small to look forward to can help.",
      "It sounds like you handled it with good humour, which is half the battle.")),
    (("I tried making bread from scratch last night and it came out like a brick.",
      "Cooking is becoming my way to unwind after work.",
      "I'm trying to eat fewer takeaways but I get so tired in the evenings.",
      "What's a quick dinner I can make with whatever is left in the fridge?",
      "My soup turned out surprisingly good, I was proud of myself.",
      "I burned the onions again, I always get distracted."),
     ("Dense bread usually means the dough needed more time to rise or a bit more water.",
      "Batch cooking on the weekend can make weekday evenings much easier.",
      "A simple frittata or a stir fry is a great way to use up leftover vegetables.",
      "It's great that cooking has become relaxing for you; that is a healthy way to decompress.",
      "Lower heat and a little patience make a big difference with onions.",
      "Celebrating small wins in the kitchen keeps the motivation going.")),
    (("Work has been really stressful, everyone wants everything yesterday.",
      "I had a long meeting that could honestly have been an email.",
      "I'm feeling a bit overwhelmed with my to-do list today.",
      "My team lunch was nice though, we laughed a lot.",
      "I keep checking messages late at night and I know I shouldn't.",
      "I think I need to get better at saying no to extra tasks."),
     ("That sounds exhausting, and it is completely understandable to feel stretched thin.",
      "Blocking focus time in your calendar can protect you from constant interruptions.",
      "Writing down the three most important tasks for tomorrow can make a long list feel manageable.",
      "Setting a cut-off time for messages in the evening might help you rest properly.",
      "Saying no politely, with a reason and an alternative, is a skill that gets easier with practice.",
      "It's good that there were lighter moments too; those matter more than we think.")),
    (("I started watching a new crime series and I can't stop.",
      "I finished a novel last night and I'm weirdly sad it's over.",
      "Any ideas for a good podcast for my commute?",
      "I've been listening to old albums from when I was a teenager.",
      "The documentary about deep sea creatures was fascinating.",
      "I want to read more but I end up scrolling on my phone instead."),
     ("That post-book feeling is real; a good story leaves a gap when it ends.",
      "For a commute, narrative history or interview podcasts tend to be easy to follow.",
      "Keeping a book on your bedside table and the phone in another room can nudge the habit.",
      "Music from our teenage years has a strong pull; it's tied closely to memory.",
      "Nature documentaries are a lovely way to switch off and learn something at the same time.",
      "Binge-worthy shows are fun, just watch out that they don't eat into your sleep.")),
    (("I went to the gym for the first time in weeks and everything hurts.",
      "I'm trying to get back into running but my knees complain.",
      "Yoga in the morning has been making me feel calmer.",
      "I skipped my workout again because I was tired.",
      "I've been sleeping badly, waking up around three every night.",
      "I walked all the way home today instead of taking the bus."),
     ("Soreness after a break is normal; gentle movement the next day helps it pass.",
      "Easing back in with shorter runs and softer surfaces can be kinder to your knees.",
      "A calm morning routine can set the tone for the whole day.",
      "Rest days are part of training too, so don't be too hard on yourself.",
      "Waking in the night is common under stress; keeping the room cool and dark can help.",
      "Walking home is a great way to fit in movement without it feeling like a workout.")),
    (("I'm thinking about redecorating the spare room but I have no idea where to start.",
      "The plants on my balcony are finally flowering.",
      "I spent the whole Saturday cleaning and it felt oddly satisfying.",
      "My neighbours were playing music until late again.",
      "I want to make my home feel cosier for the winter.",
      "I finally fixed the squeaky door and I feel like a hero."),
     ("Starting with a mood board or a single piece you love can anchor a room's design.",
      "Flowering plants are such a reward for patient care; enjoy them.",
      "A deep clean can feel like a reset for the mind as well as the home.",
      "Late noise is frustrating; a friendly word often works better than a note.",
      "Warm lighting, soft textiles and a few candles go a long way for cosiness.",
      "Small fixes like that are satisfying precisely because they annoy us every day.")),
    (("I'm feeling a bit lonely lately, my friends are all so busy.",
      "I had a really lovely phone call with an old friend today.",
      "Sometimes I wonder if I'm doing enough with my life.",
      "I feel grateful today, things are slowly getting better.",
      "I got some kind feedback at work and it made my whole week.",
      "I'm nervous about the changes coming up but also a bit excited."),
     ("Feeling lonely when everyone is busy is very human; reaching out first is often welcomed.",
      "Reconnecting with old friends can be so nourishing; I'm glad that call went well.",
      "Those big questions come up for everyone; progress is rarely as visible from the inside.",
      "It's wonderful to hear that things are getting better, and noticing it matters.",
      "Kind feedback is worth holding on to; maybe write it down for harder days.",
      "Mixed feelings about change make sense; excitement and nerves are close cousins.")),
)
CHAT_OPENERS = ("Hey,", "Hi again!", "Morning!", "Quick one:", "Okay so", "Also,", "By the way,", "Hmm,", "")
ASSISTANT_OPENERS = ("That makes sense.", "Thanks for sharing that.", "Good question.", "I hear you.",
                     "Of course.", "That's a lovely thing to hear.", "Understood.", "Happy to help with that.")
ACKS = ("Got it, I'll keep that in mind.", "Noted, thanks for letting me know.",
        "Thanks, that's useful to remember.", "Okay, I've made a note of that.",
        "Good to know, I'll remember it for later.")

# agent flavor
MODULES = ("billing", "auth", "scheduler", "ingest", "reports", "notifications", "search", "storage",
           "payments", "profiles", "exporter", "webhooks")
FUNC_VERBS = ("parse", "load", "validate", "render", "fetch", "compute", "normalize", "resolve", "build",
              "flush", "merge", "retry")
FUNC_NOUNS = ("invoice", "token", "config", "batch", "window", "payload", "header", "schedule", "index",
              "snapshot", "cursor", "manifest")
LIBRARIES = (("HTTP client", ("httpx", "requests", "aiohttp", "urllib3")),
             ("task queue", ("Celery", "RQ", "Dramatiq", "Huey")),
             ("database", ("PostgreSQL", "SQLite", "MySQL", "CockroachDB")),
             ("date parsing library", ("pendulum", "dateutil", "arrow", "ciso8601")),
             ("logging format", ("structured JSON logs", "plain text logs", "logfmt")),
             ("test runner", ("pytest", "unittest", "ward", "nose2")),
             ("serialization library", ("msgspec", "pydantic", "attrs", "marshmallow")),
             ("cache backend", ("Redis", "Memcached", "an in-process LRU", "DiskCache")))
CONFIG_KEYS = ("REQUEST_TIMEOUT_MS", "MAX_CONNECTIONS", "WORKER_POOL_SIZE", "CACHE_TTL_SECONDS", "BATCH_SIZE",
               "RETRY_BACKOFF_MS", "LISTEN_PORT", "RATE_LIMIT_PER_MINUTE", "SESSION_TTL_SECONDS",
               "UPLOAD_LIMIT_KB")
AGENT_TASKS = ("The nightly export job keeps timing out; can you find out why?",
               "Please add input validation to the signup endpoint.",
               "Tests in the reports module are flaky on CI, can you take a look?",
               "We need pagination on the search results endpoint.",
               "Can you refactor the retry logic so it is shared between clients?",
               "The webhook handler sometimes processes the same event twice. Please fix it.",
               "Let's clean up the deprecated settings and make the config loading stricter.",
               "Add a health check endpoint that reports database connectivity.")
AGENT_USER_FOLLOWUPS = ("Looks good, keep going.", "Can you also check the other callers of that function?",
                        "Run the full test suite before we move on.", "Why did that test fail?",
                        "Let's keep the change small for now.", "Please don't touch the migrations folder.",
                        "Nice, what's next?", "Can you explain that error in plain words?")
AGENT_THOUGHTS = ("Let me look at how this module is structured before changing anything.",
                  "I'll search for the places that call this helper so the change stays consistent.",
                  "Running the tests now to see the current state.",
                  "The failure points at the parsing step, so I'll read that file next.",
                  "I'll make a small, focused edit and then re-run the affected tests.",
                  "This error comes from a missing import; the fix should be straightforward.",
                  "I want to confirm the behaviour with a quick check in the shell.",
                  "Before editing, I'll check whether there is an existing test that covers this path.")
AGENT_SUMMARIES = ("The change is in place and the targeted tests pass. The remaining warnings are unrelated "
                   "to this task and were already present on the main branch.",
                   "I found the root cause: the function swallowed the exception and returned an empty "
                   "result, so the caller retried forever. I changed it to raise and added a test.",
                   "The test failure was caused by shared state between tests. Each test now builds its "
                   "own fixture, which removes the ordering dependency we saw on CI.",
                   "That command failed because the virtual environment was not active. I re-ran it with "
                   "the project interpreter and it completed normally.",
                   "The grep shows three call sites. Two of them already pass the new argument; the third "
                   "one is in a script that is no longer used, so I left it alone for now.",
                   "I kept the edit minimal: only the validation function changed, and the public "
                   "interface is the same, so callers do not need updating.")
