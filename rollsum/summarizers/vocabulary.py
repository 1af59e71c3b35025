"""A small model of general English: which words say nothing about *this* conversation.

Salience needs an inverse document frequency, and the natural background corpus, "English in
general", is not something an offline, dependency-free library can ship. Two hand-kept tiers
stand in for it:

- `FUNCTION_WORDS` (weight 0): articles, pronouns, auxiliaries, prepositions, conjunctions,
  contractions and interjections. They occur in every sentence of every conversation.
- `COMMON_WORDS` (low weight): the general vocabulary of everyday talk that is frequent in any
  conversation whatever it is about: generic verbs (go, get, think, love), evaluations (great,
  amazing, cool), generic nouns (thing, time, people), degree adverbs (really, totally) and
  chat acknowledgements (thanks, congrats).

Every other word is treated as specific: it names something (a place, an object, an
activity, a tool) and is what a later question asks about. The lists are deliberately generic
(written from English usage, not from any evaluation data) so that they carry over to
conversations and domains we have never seen. Keep them lowercase and free of topic words.
"""

from __future__ import annotations

FUNCTION_WORDS: frozenset[str] = frozenset("""
a about above across after afterwards again against all almost along already also although am among
amongst an and another any anybody anyhow anyone anything anyway anywhere are aren't around as at
be became because become becomes been before beforehand behind being below beside besides between
beyond both but by can can't cannot could couldn't did didn't do does doesn't doing don't done down
during each either else elsewhere enough etc even ever every everybody everyone everything everywhere
except few for from further had hadn't has hasn't have haven't having he he'd he'll he's hence her
here here's hers herself him himself his how how's however i i'd i'll i'm i've ie if in indeed into
is isn't it it'd it'll it's its itself just let let's lets may maybe me might mine more moreover most
mostly much must mustn't my myself neither never nevertheless no nobody none noone nor not nothing
now nowhere of off often on once one ones only onto or other others otherwise ought our ours
ourselves out over own per perhaps please quite rather same shall shan't she she'd she'll she's
should shouldn't since so some somebody somehow someone something sometime sometimes somewhat
somewhere still such than that that'd that'll that's the their theirs them themselves then thence
there there'd there'll there's thereby therefore these they they'd they'll they're they've this
those though through throughout thru thus to together too toward towards under unless until up upon
us very via was wasn't we we'd we'll we're we've were weren't what what'll what's whatever when
when's whence whenever where where's whereas wherever whether which while who who'd who'll who's
whoever whole whom whose why why's will with within without won't would wouldn't yet you you'd
you'll you're you've your yours yourself yourselves
im ive id ill youre youve theyre thats whats dont doesnt didnt cant wont isnt arent wasnt werent
couldnt wouldnt shouldnt havent hasnt hadnt lets gonna wanna gotta kinda sorta ya yeah yep yes yup
nope nah oh ok okay okey hey hi hello hiya bye goodbye wow whoa oops ah aw aww hmm huh um uh er
haha hahaha lol omg ooh yay hooray ugh phew btw fyi imo imho tbh idk ngl brb ttyl thx ty np
""".split())

COMMON_WORDS: frozenset[str] = frozenset("""
able absolutely actually add added agree agreed ahead alright amazing appreciate appreciated
appreciating awesome awful bad basically beautiful believe best better big bit blast bring brings
brought busy call called came care cared cares caring certainly chance change changed check
cheers choose chose come comes coming completely congrats congratulations cool could course crazy
cute day days deal dear decide decided definitely different difficult do doing done easy else
end ended enjoy enjoyed enjoying especially everything exactly excited exciting experience
experiences fab fabulous fact fantastic far favorite favourite feel feeling feelings feels felt
find finding fine finally first found friend friends fun funny gave get gets getting give given
gives giving glad go goes going gone good got gotten great guess guys had happen happened
happening happens happy hard hear heard hello help helped helpful helps hey hope hoped hopefully
hopes hoping hug idea ideas important incredible inspiring interesting keep keeping kept kind kinds
knew know knowing known knows last late lately later least leave left less let life like liked likes
little live lived lives living long look looked looking looks lot lots love loved lovely loves
loving lucky made make makes making man many matter mean means meant mind moment moments much
myself need needed needs new next nice night ok old once one ones open others part people perfect
person place places plan planned plans point pretty probably proud put quite ready real really
reason recently remember remind reminds right same saw say saying says see seeing seem seemed seems
seen set share shared sharing show showed sort special start started stay stuff super support
supportive sure take taken takes taking talk talked talking tell telling tells terrible thank
thanks thing things think thinking thought thoughts time times today told took totally tough tried
true truly try trying turn turned understand understanding unique use used using usual usually
want wanted wanting wants way ways week well went whole wish wonder wonderful work worked works
world wow year years yesterday
sound sounds sounded honestly seriously obviously literally anyway anyways basically
definitely certainly clearly simply totally absolutely glad sorry awesome soon
""".split())
