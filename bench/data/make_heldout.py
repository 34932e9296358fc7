# ruff: noqa: E501, SIM905
"""Generator for ``recall_heldout.json``: a hand-written recall evaluation set kept apart from
``recall_labelled.json`` and from the recall code (see README.md in this folder).

The memories and questions below are written by hand in a small line format; this script only
orders memories by date, gives them ids and recording instants, numbers the questions, assigns the
dev/test split (stratified per kind by a hash of the question id) and checks the file before it
writes it. Run ``python bench/data/make_heldout.py`` to rewrite ``recall_heldout.json``.

Line format inside the ``CHUNKS`` strings (one item a line, ``#`` lines are comments):

    M <YYYY-MM-DD> <key or -> | <memory text>
    Q <kind>[:<lang>] <key,key or -> | <question> [|| <note>] [|| absent:<tok>;<tok>]

``absent:`` lists strings that must not occur in any memory text (a self-check for near-misses
built on a neighbouring date, id or name); it is not written to the JSON file.
"""

from __future__ import annotations

import hashlib
import json
import re
import sys
from collections import Counter, defaultdict
from datetime import UTC, datetime, timedelta
from pathlib import Path

NOW = "2026-09-01T12:00:00Z"
OUT = Path(__file__).with_name("recall_heldout.json")
KINDS = {
    "para": "paraphrase",
    "anch": "anchor",
    "mult": "multilingual",
    "temp": "temporal",
    "ent": "entity",
    "unrel": "unrelated",
    "near": "near-miss",
}
KIND_ORDER = list(KINDS.values())
DEV_SHARE = 0.4

# The same small function-word list and crude stemmer as tests/test_bench_heldout.py.
FUNCTION_WORDS = set(
    """
    a an the and or but if then than so as of to in on at by for with from into onto about over
    under after before between through during up down out off again there here this that these
    those it its i me my mine myself we us our ours you your yours he him his she her they them
    their theirs what which who whom whose when where why how whether is am are was were be been
    being do does did done doing have has had having will would shall should can could may might
    must not no nor any some all each every both either neither other another such own same just
    also too very only yet still ever much many more most anything something nothing anyone
    someone until since while per via s t d ll m re ve don doesn didn isn aren wasn weren won
    """.split()
)


def stems(text: str) -> set[str]:
    words = re.findall(r"[^\W_]+", text.lower())
    return {w[:5] for w in words if w not in FUNCTION_WORDS}


LANG_WORDS = {
    "en": set(
        "the and is are my to of for with what when where who did does how which have has our we you from".split()
    ),
    "pl": set(
        "się nie jest czy jak gdzie kiedy co na w z że mój moja moje mojej mojego mojemu ile mam był była było jaki jaka jakie który która od po dla przez ja mi u o za jestem mamy nam nas".split()
    ),
    "es": set(
        "el los las del que qué y es un una por para con cuándo dónde cuánto cuánta cuántos cómo quién mi mis se su al lo hay fue está tengo tiene nuestro nuestra".split()
    ),
    "de": set(
        "der die das und ist ich wir mein meine meinen meiner meinem wann wo wie wer welche welcher welches zum zur sich vom seit mit für von zu im auf den dem nicht ein eine einen hat habe sind bei uns unser unsere unseren noch".split()
    ),
    "fr": set(
        "le les des du et est une que qui quel quelle quels quelles quand où combien mon ma mes notre nos pour avec dans sur au aux ce cette je nous vous pas à été il elle qu".split()
    ),
}


def detect_lang(text: str) -> str:
    words = re.findall(r"[^\W_]+", text.lower())
    scores = {lang: sum(w in vocab for w in words) for lang, vocab in LANG_WORDS.items()}
    best = max(scores.values())
    winners = [lang for lang, s in scores.items() if s == best]
    return winners[0] if len(winners) == 1 and best > 0 else "?"


CHUNKS: list[str] = []

# ---------------------------------------------------------------- home, the move, household
CHUNKS.append(r"""
M 2025-12-03 flat_old | Our flat: Lindenweg 14, 3rd floor left, 04155 Leipzig-Gohlis. Landlord is Herr Böttcher; rent is €1,140 including heating.
M 2025-12-09 - | Herr Böttcher says the caretaker, Mr. Sauer, will bleed the bathroom radiator at Lindenweg sometime next week.
M 2025-12-15 buy_idea | User: Diego and I keep circling back to buying instead of renting. Ceiling is €420k, three rooms minimum, a balcony would be great, and it has to be cyclable from Diego's restaurant because he finishes at midnight most days. Also I don't want to be further than 30 minutes from the office by tram. Assistant: Understood — I'll keep a running list of viewings with prices and your criteria (≤ €420k, 3+ rooms, balcony, bikeable for Diego, ≤ 30 min tram to work).
M 2026-01-10 view1 | Viewing on 17 January at 11:00: 3-room flat at Kastanienallee 7, Plagwitz, 82 m², asking €398,000. Agent: Nadine Kühne from Elster Immobilien.
M 2026-01-12 view2 | Viewing on 24 January at 15:30: 4-room flat at Zschochersche Straße 51, 96 m², asking €455,000 — over budget but comes with a share of the courtyard garden.
M 2026-01-18 - | Viewing on 21 January at 18:00: 2.5-room flat in Connewitz, Bornaische Straße, 71 m², asking €349,000; agent said there are already eleven interested parties.
M 2026-01-25 zsch_turn | User: The Zschochersche place was lovely, honestly, but the stairwell smelled of damp and it's €35k over what we said we'd spend. Kastanienallee still feels right to me — the balcony faces west and Biscuit would have the canal path right outside. Diego wants a second viewing and to bring his dad's friend Paco, who used to be a builder, to look at the windows. Oh and remind me I owe Jonas €60 for the Moderat tickets. Assistant: Will do: second Kastanienallee viewing with Paco, and €60 owed to Jonas for the concert tickets.
M 2026-02-03 jonas_paid | Paid Jonas back the €60 for the Moderat concert tickets by bank transfer; we're square.
M 2026-02-08 offer | Offer on Kastanienallee 7 accepted: we offered €385,000, the seller Mr. Vance countered, and we agreed on €389,000.
M 2026-02-10 notice | Sent written notice on the Lindenweg 14 lease by registered letter; with three months' notice the tenancy ends on 31 May 2026.
M 2026-02-19 mortgage | Mortgage with Elbtal Bank: €300,000 over 25 years, 3.42% fixed for 10 years, €1,498 a month. Our adviser there is Mr. Gerlach.
M 2026-02-20 - | Elbtal Bank wanted the last three payslips and the 2024 tax assessment for the mortgage file; uploaded them today.
M 2026-03-02 notary | Notary appointment for the Kastanienallee purchase: 12 March 2026 at 14:00, Notariat Dr. Pfeiffer, Karl-Liebknecht-Straße 40.
M 2026-03-12 signed | Signed the purchase contract at Dr. Pfeiffer's office today. The land registry entry can take six to eight weeks, he said.
M 2026-03-18 kitchen_march | Kitchen plan for Kastanienallee decided: handleless matte sage-green fronts, induction hob, oak worktop, and we're dropping the dishwasher-drawer idea. Budget €14k with Küchenstudio Adler.
M 2026-03-25 kitchen_measure | Küchenstudio Adler will measure the kitchen at Kastanienallee 7 on 2 April at 08:00; the fitter's name is Rainer.
M 2026-04-14 handover | Key handover for Kastanienallee 7 is set for 30 April at 10:00, at the flat, with Mr. Vance.
M 2026-04-22 kitchen_change | Changed the kitchen worktop from oak to light grey quartz composite after Adler's revised quote (+€1,100). The fronts stay sage green.
M 2026-04-30 keys_got | Got the keys to Kastanienallee 7 from Mr. Vance. Meter readings at handover: electricity 48,213 kWh, water 312 m³.
M 2026-05-04 movers | Removal firm booked: Umzüge Pohl, 16 May, start 07:30, three men and a 7.5 t truck, fixed price €1,850.
M 2026-05-16 moved | We moved today from Lindenweg 14 in Gohlis to Kastanienallee 7 in Plagwitz. New address: Kastanienallee 7, 2nd floor, 04229 Leipzig.
M 2026-05-20 - | Address change done with Elbtal Bank, the health insurer and Diego's employer. Still open: car registration and the Bürgeramt visit on 3 June.
M 2026-05-31 handback | Returned the Lindenweg 14 keys to Herr Böttcher. He'll pay back the €3,420 deposit, minus any repainting, within six months.
M 2026-07-15 deposit | Herr Böttcher transferred €3,020 of our deposit; he kept €400 for repainting the hallway.
M 2025-12-20 net_old | Home internet at Lindenweg: Netzwelle DSL 100 Mbit, €39.99/month, contract runs until 30 June 2026.
M 2026-05-28 net_new | Fibre is live at Kastanienallee: GlasLink 500 Mbit for €44.90/month. The old Netzwelle DSL contract ends 30 June.
M 2026-01-08 power_old | Electricity at Lindenweg comes from Stadtwerke Leipzig on the basic tariff: 36 ct/kWh, €92 monthly advance payment.
M 2026-05-22 power_new | For Kastanienallee we signed with Grünstrom Nord: 29.8 ct/kWh, €71 monthly advance, 100% hydro.
M 2026-06-03 - | Termin im Bürgeramt Leipzig-West erledigt: Wohnsitz umgemeldet, die neue Meldebescheinigung liegt im Ordner „Wohnung“.
M 2026-06-05 hausverw | Hausverwaltung für die Kastanienallee 7 ist Frau Ritter von der Verwaltung Saalepark; Sprechzeiten dienstags 9–12 Uhr, das Hausgeld beträgt 286 € im Monat.
M 2026-06-06 sperr | Sperrmüll ist für den 9. Juni angemeldet: das alte Sofa und zwei Billy-Regale kommen vor die Kastanienallee 7.
M 2026-06-10 okafor | Neighbour across the landing at Kastanienallee, Mr. Okafor (2nd floor right), keeps our spare key for emergencies; we keep his.
M 2026-06-18 - | Mr. Okafor mentioned the building's bike cellar door sticks; he's reporting it to the Hausverwaltung.
M 2026-06-24 cleaner | Cleaner: Agnieszka comes every other week for three hours at €18/hour, paid in cash; she starts at Kastanienallee on 1 July.
M 2026-07-02 bins | Bin collection at Kastanienallee: paper every second week, packaging (yellow bin) weekly, residual waste every two weeks opposite the paper week.
M 2026-07-21 washer | Washing machine (Bosch, 6 years old) is leaking from the door seal; repair visit by Haushaltsgeräte Lenz booked for 28 July between 8 and 12, call-out fee €69.
M 2026-07-29 washer_fix | The Lenz technician replaced the door seal on the washing machine; total bill €143 including the call-out fee.
M 2026-08-06 balcony_turn | User: Finally sorted the balcony — two big planters with tomatoes and basil, the folding table from Diego's cousin, and a string of solar lights. Pestka has decided the planter is her throne, which is a problem. Separately, can you remind me that the Hausgeld goes up to €301 from October? Frau Ritter sent the new Wirtschaftsplan. And Diego wants to host his colleagues on 22 August, so we need more chairs. Assistant: Noted: Hausgeld rising to €301 from October, and Diego's colleague dinner on 22 August (more chairs needed).

Q temp moved | Where do I live now?
Q temp flat_old,moved | What was my address before the move?
Q temp net_new,lt17 | Which internet provider do we use at the moment?
Q temp net_old | How fast was the connection at the old flat and who provided it?
Q temp power_old | Who supplied electricity at the old place, and at what price?
Q temp power_new | What are we paying per kilowatt-hour for electricity now?
Q temp kitchen_march,kitchen_de | What did I decide about the kitchen in March?
Q temp kitchen_change,st05 | What is the kitchen worktop going to be made of now?
Q temp jonas_paid | Do I still owe Jonas money?
Q temp deposit | How much of the old deposit did we actually get back?
Q temp balcony_turn | How much will the Hausgeld be from October?
Q para handover,keys_got,lt29 | When could we first get inside the apartment we purchased?
Q para mortgage | What recurring sum do we send the lender for the home loan?
Q para movers,move_pl | Which company is hauling our furniture to the new place?
Q para cleaner | Who tidies up our home, and what does she charge?
Q para washer,washer_fix | What was wrong with the laundry appliance?
Q para buy_idea | What requirements did we set for purchasing a home?
Q anch notary,signed,notar_de | What happens on 12 March at 14:00?
Q anch keys_got | Which reading was 48,213 kWh?
Q anch view2,zsch_turn | What do I know about Zschochersche Straße 51?
Q anch offer | What price did we agree at €389,000?
Q anch view1 | What time was the viewing on 17 January?
Q ent handover,offer,keys_got | Who is Mr. Vance?
Q ent view1 | Who is Nadine Kühne and where does she work?
Q ent kitchen_measure,st05,lt15 | Who is Rainer?
Q ent okafor | Which neighbour has our spare key?
Q ent flat_old,handback,deposit | Who was our landlord at Lindenweg?
Q mult:de deposit | Wie viel Kaution hat uns der alte Vermieter zurücküberwiesen?
Q mult:pl net_new | Ile płacimy miesięcznie za światłowód w nowym mieszkaniu?
Q mult:es moved,movers | ¿Qué día nos mudamos al piso de Plagwitz?
Q mult:fr mortgage | Quel est le taux fixe de notre prêt immobilier et pour combien de temps ?
Q mult:en hausverw | Who manages our building, and what are her office hours?
Q mult:en sperr | When is the bulky-waste pickup for the old sofa?
Q near - | When is the viewing at Zschochersche Straße 15? || stored: Zschochersche Straße 51 (24 January) || absent:Straße 15
Q near - | What rate did Sparkasse offer us for the mortgage? || stored: the mortgage is with Elbtal Bank; no Sparkasse offer || absent:Sparkasse
Q near - | What is booked for 3 July at the Bürgeramt? || stored: the Bürgeramt visit was on 3 June || absent:3 July
Q near - | How much deposit did we pay for the Kastanienallee flat? || stored: the deposit was for the rented Lindenweg flat; Kastanienallee was bought
Q near - | What is Mr. Okafor's first name? || stored: only his surname and that he keeps our spare key
Q near - | When does Agnieszka start cleaning at Lindenweg? || stored: she starts at Kastanienallee on 1 July
""")

# ---------------------------------------------------------------- work at Fernwell Systems
CHUNKS.append(r"""
M 2025-12-02 job | I'm engineering manager of the Routing team at Fernwell Systems (logistics software), Leipzig office on Brühl. My manager is Renate Vogel, Head of Engineering.
M 2025-12-04 team | Routing team: Priya Nair (senior backend), Marek Zieliński (SRE), Hannah Lutz (product designer), Femi Adeyemi (data engineer); Tobias Krämer is our product manager.
M 2025-12-08 standup_old | Weekly Routing team meeting: Tuesdays at 10:00 in room Elster, 45 minutes.
M 2026-02-26 standup_new | From March the weekly Routing team meeting moves to Thursdays at 09:30 (room Pleiße), because Tobias has a steering call on Tuesdays.
M 2025-12-11 atlas | Project Atlas: moving the route planner out of the old monolith into its own service. Target launch 15 May 2026. Sponsor: Renate Vogel.
M 2026-01-14 atlas_db | Decision for Atlas: PostgreSQL 16 with PostGIS instead of DynamoDB — the team knows it and the geo queries are simpler.
M 2026-02-17 atlas_kafka | Decided with Priya and Marek to drop Kafka from Atlas v1; we'll use the Postgres outbox pattern and revisit event streaming in Q4.
M 2026-04-09 atlas_slip | Atlas launch pushed from 15 May to 30 June: the customs-export rewrite (FW-1270) isn't ready and Nordhafen wants a two-week pilot first.
M 2026-07-07 atlas_live | Atlas went live today, a week after the 30 June target. Cut-over took 40 minutes, no customer-facing errors.
M 2026-01-06 fw1021 | FW-1021: add per-customer rate limiting to the routing API (Priya), due end of January.
M 2026-01-07 - | FW-1027: flaky integration test for the depot geocoder; assigned to Femi, low priority.
M 2026-02-12 fw1207 | FW-1207: map tile caching for the dispatcher UI — cuts tile requests by roughly 70%. Owner: Hannah for the design, Priya for the backend.
M 2026-02-13 - | FW-1217: dispatcher UI dark mode. Parked until after Atlas; Hannah has mockups in Figma.
M 2026-03-03 fw1270 | FW-1270: rewrite of the customs-export module for Atlas (EU ICS2 fields). Owner: Femi, reviewer Priya, estimate 5 weeks.
M 2026-03-04 - | FW-1207 merged; tile cache hit rate on staging is 68%.
M 2026-05-19 fw1270_rev | FW-1270 finally passed review; Femi is adding the last ICS2 validation rules, QA starts 2 June.
M 2026-01-28 rel340 | Released Fernwell 3.4.0 on 28 January: new depot filters, rate limiting (FW-1021), and the Italian translation.
M 2026-02-03 rel341 | Hotfix 3.4.1 shipped on 3 February — fixes the timezone bug that put Milan deliveries an hour early for Trasporti Bellini.
M 2026-04-16 rel350 | Fernwell 3.5.0 released 16 April: tile caching (FW-1207), bulk route import, and Node 20 on the dispatcher.
M 2026-07-30 rel360_plan | 3.6.0 release candidate is on staging; release planned for 12 August after the Atlas stabilisation freeze.
M 2026-02-09 inc412 | INC-0412: 2-hour routing API outage on 9 February, caused by an expired TLS certificate on the internal load balancer. Marek led the response.
M 2026-02-16 inc412_post | Postmortem for INC-0412 agreed: automated certificate renewal with alerts at 30 and 7 days, owner Marek, due 15 March.
M 2026-05-27 - | INC-0421: 25 minutes of slow route optimisation on 27 May after a bad index on the stops table; rolled back by Priya.
M 2026-03-24 mgr_change | Renate is moving to the Munich office to lead Platform; from 1 April my manager is Sunil Rao (VP Engineering, previously at a Berlin fintech).
M 2026-04-03 sunil_1on1 | First 1:1 with Sunil: every second Wednesday at 16:00, 30 minutes. He wants a one-page Atlas risk list before each one.
M 2026-03-02 lina | Lina Hoffmann joined the Routing team today as a junior backend developer; Priya is her onboarding buddy.
M 2026-04-28 hiring | Senior frontend opening (job FW-SFE-03): interviews with Yusuf Demir on 5 May and with Clara Weiß on 7 May.
M 2026-05-15 yusuf | Yusuf Demir accepted our offer for the senior frontend role; he starts on 1 August.
M 2026-07-10 priya_promo | Priya Nair's promotion to Staff Engineer is approved, effective 1 July; salary band moves from E4 to E5.
M 2026-01-20 budget | Routing team budget for 2026: €48,000 for tools and training, plus €12,000 travel.
M 2026-05-06 laptop_old | My work laptop is still the ThinkPad X1 Carbon Gen 9 from 2021; IT says the replacement should come in June.
M 2026-06-15 laptop_new | IT swapped my work laptop: the ThinkPad X1 Carbon went back and I now have a MacBook Pro 14 (M3 Pro, 36 GB).
M 2026-03-10 oncall | On-call rotation for Routing: weekly, handover on Mondays at 10:00; Marek owns the schedule; I'm only the escalation contact.
M 2026-03-19 nordhafen | Nordhafen Freight (Hamburg) is our biggest Atlas pilot customer; their contact is Maren Ost, head of dispatch.
M 2026-05-12 - | Nordhafen pilot for Atlas runs 15–29 June on their Bremen depot only; Maren Ost will sign off at the end.
M 2026-02-04 bellini | Trasporti Bellini (Milan) contact is Giorgio Sala; they were the customer hit by the 3.4.1 timezone bug and got a 10% credit on February's invoice.
M 2026-06-24 offsite | Routing team offsite on 24 June at the Cospudener See: morning retro on Atlas, afternoon paddle boarding, dinner at Hafen Zöbigker.
M 2026-08-19 rel360_ship | 3.6.0 shipped on 19 August instead of 12 August; the Atlas freeze ran a week longer.
M 2026-01-16 work_turn1 | User: Long day. Renate pushed back on the Atlas timeline again — she thinks 15 May is too tight but won't say so to the board. Priya's rate-limiting work (FW-1021) looks solid though, and Femi found the bug in the depot geocoder test that's been flaking. Separately I need to book the car in for winter tyres before the snow next week, and Diego asked if we can do his cousin Álvaro's birthday on the 31st. Assistant: Noted the Atlas timeline worry, FW-1021 progress and the geocoder test fix. Reminders: winter tyres before next week; Álvaro's birthday on 31 January.
M 2026-03-31 work_turn2 | User: Renate's farewell was lovely — Tobias made a slideshow and Marek cried a bit, which nobody will let him forget. I'm nervous about Sunil, to be honest; everyone says he's great but very numbers-driven. Hannah showed the new dispatcher mockups and they're really good. Also I forgot Mama's name day is on 19 November, not in April like I'd written in the calendar — can you fix that note? Assistant: Got it. I've noted that your mum's name day is 19 November. Good luck with Sunil's first week.
M 2026-06-12 lyon_talk | Spoke at Rhône Tech Days in Lyon on 11 June: "Migrating a route planner without a code freeze", 30 minutes, about 140 people. Slides are in the Conferences folder.
M 2026-04-21 lyon_booked | Rhône Tech Days, Lyon, 10–11 June: my talk is accepted; travel approved from the team's travel budget; hotel Le Petit Bouchon booked for 10–12 June.
M 2026-07-17 work_turn3 | User: Atlas has been live for ten days and the error rate is lower than the monolith's, which nobody expected. Sunil wants a write-up for the all-hands on 30 July. Meanwhile Yusuf starts on 1 August and I haven't sorted his laptop. Personal stuff: Biscuit has his booster shot on 25 July and I still need to book the Algarve car rental. Assistant: Noted: Atlas write-up for the 30 July all-hands, laptop for Yusuf before 1 August, Biscuit's booster on 25 July, and the Algarve car rental to book.
M 2026-08-25 femi_leave | Femi is on parental leave from 14 September to 14 December; Lina will cover the data pipeline on-call with Marek as backup.

Q temp mgr_change,sunil_1on1 | Who is my manager now?
Q temp job,mgr_change,lt11,work_turn2 | Who was my manager before April?
Q temp standup_new | When is the weekly team meeting now?
Q temp standup_old | What day and time was the team meeting originally?
Q temp atlas,atlas_slip,work_turn1 | What was the original launch date for Atlas?
Q temp atlas_live,wt7,work_turn3,lt27,ru16 | When did Atlas actually go live?
Q temp atlas_slip | Why was the Atlas launch postponed in April?
Q temp laptop_new | What laptop do I use for work now?
Q temp laptop_old,laptop_new | What work laptop did I have before the swap?
Q temp atlas_kafka | What did we decide about Kafka in February?
Q temp atlas_db | What database decision did we make for Atlas in January?
Q temp rel360_plan,rel360_ship | What was the planned 3.6.0 release date before the delay?
Q temp rel360_ship | When did 3.6.0 actually ship?
Q para atlas_slip | Why did the go-live of the new routing service get delayed?
Q para inc412 | What made our platform unreachable for a while this winter?
Q para budget | How much money does my group have for equipment and courses this year?
Q para oncall | Who organises who gets paged, and when does the duty switch to the next person?
Q para lina,lina_plan | Who is the most recent entry-level hire in my group, and who is looking after her?
Q para priya_promo | Which colleague climbed the career ladder this summer?
Q para offsite | Where did my group go for our day away from the office?
Q para femi_leave,wt10,st25 | Who will be away after having a baby, and until when?
Q anch fw1270,atlas_slip,fw1270_rev,gonogo | What is FW-1270?
Q anch fw1021,rel340,work_turn1,sprint01,fw1186 | What is FW-1021 about?
Q anch fw1207,rel350 | Which release included FW-1207?
Q anch rel341,bellini | What did 3.4.1 fix?
Q anch inc412,inc412_post,inc_notes,inc_handover | What happened in INC-0412?
Q anch hiring | Who are the candidates for FW-SFE-03?
Q anch rel350 | What date was 3.5.0 released?
Q ent team,lina | Who is on the Routing team?
Q ent nordhafen | Who is Maren Ost?
Q ent bellini | Who is our contact at Trasporti Bellini?
Q ent hiring,yusuf,wt9 | Who is Yusuf Demir?
Q ent lina,lina_plan | Who is Lina's onboarding buddy?
Q ent team | What is Hannah Lutz's role?
Q mult:de mgr_change | Wer ist seit April meine Chefin oder mein Chef bei der Arbeit?
Q mult:pl inc412 | Co było przyczyną awarii API w lutym?
Q mult:es lyon_talk,lyon_outline | ¿Sobre qué di la charla en Lyon?
Q mult:fr yusuf,st15 | Quand est-ce que le nouveau développeur frontend commence ?
Q mult:de budget | Wie hoch ist das Reisebudget meines Teams für 2026?
Q mult:fr femi_leave,st25 | Qui remplace Femi pendant son congé parental ?
Q near - | What is FW-1271? || stored: FW-1270 (customs-export rewrite) || absent:FW-1271
Q near - | What did release 3.4.2 fix? || stored: 3.4.0 and hotfix 3.4.1 only || absent:3.4.2
Q near - | What happened in INC-0413? || stored: INC-0412 (certificate outage) and INC-0421 || absent:INC-0413
Q near - | When did Clara Weiß start on the team? || stored: only that she interviewed on 7 May; Yusuf got the job
Q near - | What is Renate Vogel's phone number? || stored: her role and move to Munich, no phone number
Q near - | When is my 1:1 with Tobias? || stored: 1:1 with Sunil every second Wednesday; no 1:1 with Tobias
Q near - | What did I speak about at Rhône Tech Days in Grenoble? || stored: the talk was in Lyon || absent:Grenoble
Q near - | What is Maren Ost's role at Trasporti Bellini? || stored: Maren Ost is at Nordhafen Freight; the Bellini contact is Giorgio Sala
""")

# ---------------------------------------------------------------- my family in Poland
CHUNKS.append(r"""
M 2025-12-05 family | My parents, Halina and Jerzy Brandt, live in Kraków (Dębniki). My brother Tomek lives in Gdańsk with his wife Kasia and their kids Zosia and Kuba.
M 2025-12-06 wigilia | Wigilia u rodziców w Krakowie 24 grudnia o 17:00; ja robię pierogi ruskie i barszcz, Diego przywozi turrón od swojej mamy.
M 2025-12-14 - | Train to Kraków for Christmas: 22 December, Leipzig Hbf 06:48 via Wrocław, arriving 15:10; return 28 December.
M 2025-12-27 xmas_turn | User: Christmas in Kraków was chaos in the best way. Tata kept asking Diego about paella techniques, Zosia lost a tooth in the pierogi (it was already loose, nobody panic), and Mama announced she wants her 65th birthday in a proper restaurant this time, not at home. Kasia says she can't travel in March because of the pharmacy inventory, so Tomek will come alone. Assistant: Sounds like a wonderful Christmas! Noted: Mama wants her 65th in a restaurant, and Tomek will come without Kasia in March because of the pharmacy inventory.
M 2026-01-09 party_old | Mama's 65th birthday party: Saturday 14 March, 18:00, Restauracja Lipowa on ulica Zielna in Kraków, about 25 guests. Tomek and I split the bill.
M 2026-02-23 party_new | Change of plan for Mama's 65th: Restauracja Lipowa closed for renovation, so the party on 14 March moves to Kawiarnia Bluszcz on Józefińska, same time.
M 2026-02-24 - | Prezent dla mamy na 65. urodziny: weekend w spa w Krynicy dla niej i taty, kupiony razem z Tomkiem za 1 900 zł.
M 2026-03-15 party_done | Mama's 65th at Bluszcz was lovely; Babcia Irena came down from Nowy Targ and gave a speech. Total bill 4,300 zł, my half 2,150 zł.
M 2025-12-18 babcia | Babcia Irena (Mama's mother) is 88 and lives in Nowy Targ; I call her on Sunday afternoons because she doesn't like video calls.
M 2026-01-21 kasia | Kasia (Tomek's wife) is a pharmacist and runs the Apteka pod Lwem pharmacy in Gdańsk-Wrzeszcz.
M 2026-01-30 tomek_job | Tomek works as a marine engineer at Stocznia Bałtyk in Gdańsk; he's often away on sea trials for a week at a time.
M 2026-02-02 - | Tomek przysłał zdjęcia z prób morskich na Bałtyku — wraca do domu 8 lutego.
M 2026-03-30 dad_knee | Tata's knee replacement is scheduled for 8 April at Szpital Na Klinach in Kraków; he'll need about six weeks of rehab.
M 2026-04-09 rehab | Tata po operacji kolana czuje się dobrze; rehabilitacja od 20 kwietnia trzy razy w tygodniu w przychodni na Kapelance.
M 2026-04-11 dad_turn | User: Spoke to Mama — the operation went fine, Tata is already complaining about the hospital food, which Mama says is a good sign. I might fly to Kraków in early May to help when he's home, but it clashes with the Atlas crunch and the move prep. Also, totally unrelated, but Hannah recommended a physio for my shoulder, Lea Brandl near Karl-Heine-Straße, and I should actually call her. Assistant: Glad the operation went well. Noted: possible Kraków trip in early May, and a reminder to call the physio Lea Brandl (recommended by Hannah) about your shoulder.
M 2026-06-30 zosia_bday | Zosia turns 7 on 2 July; she wants the Lego Friends horse stable (set 42195). Ordered it to Tomek's address in Gdańsk.
M 2026-07-03 - | Zosia loved the horse stable; Tomek sent a video of her building it with Kuba "helping".
M 2026-08-12 zosia_school | Zosia starts first grade at Szkoła Podstawowa nr 12 in Gdańsk on 1 September; I promised her a pencil case with horses.
M 2026-05-08 kuba | Kuba is 3 and obsessed with trams; for his birthday on 18 October a wooden tram set would be perfect.
M 2026-02-27 magda | Cousin Magda (Aunt Basia's daughter) is getting married on 19 September in Poznań; ceremony 15:00 at the Fara church, party at Dwór Lipowy.
M 2026-03-06 - | RSVP sent for Magda's wedding: me and Diego, one room at the hotel for 19–20 September, both choosing the fish menu.
M 2026-04-24 basia | Ciocia Basia (siostra mamy) mieszka we Wrocławiu; przysłała mi przepis na sernik krakowski i pyta, kiedy przyjedziemy.
M 2026-05-30 parents_visit_old | Mama and Tata plan to visit us in Leipzig from 20 to 27 August to see the new flat.
M 2026-07-08 parents_visit_new | Parents' visit moved: Tata's rehab check-up is on 21 August, so they now come 1–8 September instead.
M 2026-07-09 parents_car | Rodzice przyjadą samochodem z Krakowa; trzeba im zarezerwować miejsce parkingowe pod domem od 1 do 8 września.
M 2026-07-26 family_turn | User: Ugh, I just realised Tomek's birthday is this week and I have nothing. He's turning 41 on 29 July. He's into sailing and old Polish jazz — maybe a Komeda vinyl? Also Kasia mentioned they might all come to Leipzig for New Year, which would be fun but the guest room will still be full of boxes. And I need to remember the vet charged €86 for Biscuit's ear drops, I want to check it against the invoice. Assistant: Tomek's 41st is on 29 July — a Krzysztof Komeda vinyl sounds like a great fit. Noted: possible New Year visit from Tomek's family, and to check the €86 vet charge for Biscuit's ear drops against the invoice.
M 2026-07-28 tomek_gift | Ordered a Komeda "Astigmatic" vinyl reissue for Tomek's 41st, delivered straight to Gdańsk; it cost 139 zł.
M 2026-08-27 mama_jars | Mama zadzwoniła: przywiozą słoiki z ogórkami kiszonymi i nalewkę wiśniową od cioci Basi.
M 2026-01-04 - | Babcia Irena's hearing aid batteries: size 312, she needs a new pack every month; Mama usually buys them.
M 2026-06-08 - | Dzwoniłam do babci Ireny — skarży się na upał, ale poza tym wszystko w porządku. Pyta o Biscuita.

Q temp party_new,party_done | Where is Mama's 65th birthday party being held after the change?
Q temp party_old,party_new | Which restaurant was originally booked for Mama's 65th?
Q temp parents_visit_new,parents_car | When are my parents coming to visit Leipzig now?
Q temp parents_visit_old | What were the original dates of my parents' visit?
Q ent family,wigilia,parents_car | Where do my parents live?
Q ent kasia,xmas_turn | What does Kasia do for a living?
Q ent family,kuba | Who is Kuba?
Q ent tomek_job | Where does my brother work?
Q ent babcia,party_done,babcia89 | Who is Babcia Irena and where does she live?
Q ent magda | Who is Magda's mother?
Q ent basia | Where does Aunt Basia live?
Q para zosia_school,zosia_enrol | When does my niece begin her education, and where?
Q para dad_knee | When is my father getting his joint operated on?
Q para kuba | What toy would suit my nephew when he turns four?
Q para babcia | Why don't I phone Granny on camera?
Q anch zosia_bday | What is Lego set 42195 for?
Q anch party_done | What was the total bill of 4,300 zł for?
Q anch tomek_gift,family_turn | Who is turning 41 on 29 July?
Q anch magda,poznan | What is happening on 19 September in Poznań?
Q mult:pl tomek_gift | Co kupiłam bratu na urodziny?
Q mult:pl zosia_school | Do której szkoły idzie Zosia od września?
Q mult:pl dad_knee | Kiedy tata ma operację kolana i gdzie?
Q mult:es kasia | ¿Dónde trabaja Kasia, la mujer de Tomek?
Q mult:de zosia_bday | Was wünscht sich Zosia zum siebten Geburtstag?
Q mult:fr parents_visit_new,parents_car | Quand est-ce que mes parents viennent nous voir à Leipzig maintenant ?
Q mult:en basia | Which cake recipe did Aunt Basia send me?
Q mult:en mama_jars | What are my parents bringing from Aunt Basia when they visit?
Q mult:en rehab,tata_rehab2 | How often does Tata do rehab after the knee operation, and where?
Q mult:en wigilia | What am I cooking for Christmas Eve at my parents'?
Q near - | When does Kuba start school? || stored: Zosia starts first grade on 1 September; Kuba (3) only started nursery
Q near - | What is Jerzy's knee surgeon called? || stored: the hospital (Szpital Na Klinach) and date, no surgeon's name
Q near - | What did we give Mama for her 60th birthday? || stored: the spa weekend for her 65th || absent:60th
Q near - | When is Magda's wedding in Wrocław? || stored: the wedding is in Poznań; Aunt Basia lives in Wrocław
Q near - | What is Tomek's wife's maiden name? || stored: only that Kasia is a pharmacist in Gdańsk-Wrzeszcz
Q near - | Which hospital did Mama have her operation at? || stored: it was Tata (Jerzy) who had the knee operation
""")

# ---------------------------------------------------------------- Diego and his family in Valencia
CHUNKS.append(r"""
M 2025-12-07 diego_job_old | Diego is sous-chef at Casa Olivo, the Spanish restaurant on Gottschedstraße; he works Tuesday to Saturday evenings and is off Sundays and Mondays.
M 2026-05-26 diego_job_new | Diego left Casa Olivo; from 1 June he's head chef at Feldküche, a catering company in Lindenau — daytime hours, weekends mostly free.
M 2026-06-20 diego_turn1 | User: Diego's first three weeks at Feldküche and he's a different person — home by six, sleeping properly, cooking for us on weekdays for the first time in years. The downside is the corporate menus bore him; he's already pitching a Valencian week to the client at the Porsche plant. We're also finally going to his colleague Ines's barbecue on the 27th. Oh, and his German B2 exam was today, results in three weeks. Assistant: That's lovely to hear. Noted: Ines's barbecue on 27 June, and Diego's B2 results expected in about three weeks.
M 2026-07-11 diego_b2 | Diego passed his German B2 exam (telc) with 86%; the certificate arrives by post.
M 2025-12-10 carmen | Diego's mother Carmen lives in Valencia (Benimaclet) and still runs her small haberdashery shop on Calle Emilio Baró.
M 2025-12-12 carmen_xmas | Carmen nos manda cada Navidad una caja con turrón de Jijona, naranjas y una botella de mistela.
M 2026-01-05 vicente | Diego's father, Vicente, retired from the port of Valencia in 2024; he restores old Vespas in the garage with his friend Paco.
M 2026-01-13 lucia | Lucía, Diego's younger sister, is an architect in Madrid at a studio in Lavapiés; her partner is called Noor.
M 2026-01-29 alvaro | Cumpleaños de Álvaro (primo de Diego) el 31 de enero: le mandamos una tarjeta y un vale de 50 € para la tienda de discos de su barrio.
M 2026-02-15 easter_plan | Easter in Valencia: 2–8 April at Diego's parents'. Flights Leipzig–Palma–Valencia with Eurowings/Vueling, €312 per person return.
M 2026-03-20 - | Para Semana Santa, Carmen quiere hacer una paella el domingo en la casa de la playa de El Perelló con toda la familia.
M 2026-04-08 easter_turn | User: Back from Valencia. Nine relatives at the Perelló paella, Vicente let me ride one of the restored Vespas (I was terrified), and Lucía told us she and Noor are moving to Lisbon in autumn for Noor's job. Carmen also gave me her recipe for fideuà, which I swore I'd write down: the trick is toasting the noodles in the oil first. Back at work tomorrow and Atlas is on fire. Assistant: Welcome back! Noted: Lucía and Noor moving to Lisbon in autumn, and Carmen's fideuà tip — toast the noodles in the oil first.
M 2026-04-10 fideua | La receta de fideuà de Carmen: fideos del 2, caldo de pescado, sepia y gambas; tostar los fideos en el aceite antes de añadir el caldo, y al final al horno cinco minutos.
M 2026-06-09 anniv | Our anniversary is 9 June — six years this year. Dinner booked at Stadtpfeifer at 19:30.
M 2025-12-22 diego_bday | Diego's birthday is 23 November; he says he wants nothing, which means he wants the Japanese knife he keeps looking at (Takamura R2 gyuto, about €190).
M 2026-01-19 diego_food | Diego hates coriander and won't eat anything with raw onion; he's fine with spice.
M 2026-03-05 diego_bike_stolen | Diego's bike (green Gazelle) was stolen from outside Casa Olivo; police report number LE-2026-0305-117.
M 2026-03-21 diego_bike_new | Diego bought a used Cube Touring bike for €480 to replace the stolen Gazelle; he now locks it with two locks.
M 2026-02-21 - | Diego wants to learn to make proper pretzels; Fräulein Brezel bakery runs a course on 14 March for €65.
M 2026-05-02 diego_turn2 | User: Diego is stressing about giving notice at Casa Olivo — Chef Raúl has been good to him for five years. He's going to tell him on Monday and offer to stay until the end of May so they can find someone. Also he finally gave me the list of what he wants in the new kitchen: a proper extractor, a deep sink and a drawer just for knives. And we still haven't decided whether to paint the bedroom grey or leave it white. Assistant: Noted: Diego gives notice to Chef Raúl on Monday and offers to stay through May; his new-kitchen wishes are a strong extractor, a deep sink and a knife drawer; bedroom colour still undecided (grey vs white).
M 2026-05-09 bedroom_white | Decided: the bedroom at Kastanienallee stays white; we'll add a dark green accent wall behind the bed instead of painting it grey.
M 2026-07-04 lucia_move | Lucía and Noor's Lisbon move is fixed for 15 October; Noor starts at a design agency there in November.
M 2026-08-14 carmen_visit | Carmen is coming to Leipzig for the first time from 10 to 17 October; flight Valencia–Frankfurt, then the ICE to Leipzig.
M 2026-08-15 carmen_pork | Carmen no come cerdo desde hace años; para su visita en octubre hay que pensar en platos de pescado y verdura.
M 2026-08-20 diego_turn3 | User: Diego's colleague dinner on Saturday went well, eight people and only one broken glass. Everyone raved about his arroz negro. He's now thinking of starting a supper club at home once a month, which I'm cautiously okay with. Meanwhile I'm slammed: the 3.6.0 release slipped to the 19th and Sunil wants the Q4 plan early. Also, my cello lesson got moved to Thursday this week. Assistant: Glad the dinner was a hit! Noted: Diego's idea of a monthly supper club, and that this week's cello lesson is on Thursday.
M 2026-02-01 - | Diego's phone number changed last year; his new work one at Feldküche is only for the kitchen landline, not for personal calls.
M 2026-07-24 katalan | Diego und ich haben beschlossen, im nächsten Jahr einen Sprachkurs für Katalanisch an der Volkshochschule zu machen, damit wir mit Vicente üben können.

Q temp diego_job_new,st20,ru23 | Where does Diego work now?
Q temp diego_job_old,diego_turn2,st02,st04,lg04 | Where did Diego work before June?
Q temp diego_bike_new | What bike does Diego ride now?
Q temp diego_bike_stolen | Which bike did Diego lose to theft, and where was it taken from?
Q temp bedroom_white,ru14 | What did we decide about the bedroom walls in May?
Q ent carmen | What does Diego's mother do?
Q ent vicente,zsch_turn | Who is Paco?
Q ent lucia,easter_turn,lucia_move | Who is Noor?
Q ent lucia,easter_turn,lucia_move,lg03 | What do I know about Lucía?
Q ent diego_turn2,st02,st04 | Who is Chef Raúl?
Q para diego_bday | What present would secretly make my partner happy in the autumn?
Q para diego_food | Which herb should I leave out when cooking for my boyfriend?
Q para anniv,lt18 | Where are we celebrating the day we got together?
Q para diego_b2 | How did my partner score on his language test?
Q para easter_plan | How much did it cost to fly to the spring holiday with my partner's family?
Q anch diego_bike_stolen | What is report LE-2026-0305-117 about?
Q anch diego_bday | What is the Takamura R2 gyuto?
Q anch carmen_visit,travel_turn1 | Who is visiting from 10 to 17 October?
Q anch anniv,lt18 | What is booked at Stadtpfeifer at 19:30?
Q mult:es diego_job_new,st20,ru23 | ¿En qué empresa trabaja Diego desde junio?
Q mult:es anniv,lt18 | ¿Cuántos años cumplimos de aniversario este junio?
Q mult:es carmen_visit | ¿Cómo va a llegar Carmen a Leipzig en octubre?
Q mult:pl diego_b2 | Jaki wynik miał Diego na egzaminie z niemieckiego?
Q mult:de diego_food | Was isst Diego nicht gern?
Q mult:fr lucia_move | Quand est-ce que Lucía déménage à Lisbonne ?
Q mult:en carmen_xmas | What does Carmen send us every Christmas?
Q mult:en fideua,easter_turn | How do you make Carmen's fideuà?
Q mult:en carmen_pork | What food should we avoid when Carmen visits?
Q mult:en katalan | Which language course are Diego and I planning to take?
Q mult:en alvaro | What did we send Álvaro for his birthday?
Q near - | When is Lucía's birthday? || stored: her job, partner and Lisbon move, not her birthday
Q near - | What did Diego's father do at the port of Barcelona? || stored: Vicente retired from the port of Valencia || absent:port of Barcelona
Q near - | What is police report LE-2026-0305-171 about? || stored: LE-2026-0305-117 (Diego's stolen bike) || absent:0305-171
Q near - | When is Carmen visiting Berlin? || stored: Carmen visits Leipzig 10–17 October
Q near - | What does Diego's brother do? || stored: Diego has a sister, Lucía; no brother
Q near - | What did Diego get for his birthday on 23 December? || stored: his birthday is 23 November and he wants a gyuto knife || absent:23 December
""")

# ---------------------------------------------------------------- health
CHUNKS.append(r"""
M 2025-12-16 gp | My GP is Dr. Anke Sommer, Hausarztpraxis on Georg-Schumann-Straße 102; open-access hours 8–10 every weekday morning.
M 2026-06-02 gp_new | Switched GP after the move: Dr. Felix Amann, Praxis am Felsenkeller in Plagwitz, took me as a new patient; first appointment 16 June at 08:40.
M 2025-12-29 dent_old | Dental check-up and cleaning with Dr. Paul Reinholz on 14 January at 09:30 (Zahnarztpraxis Reinholz, Gohliser Straße 8).
M 2026-01-09 dent_new | Dr. Reinholz's practice called: the check-up is moved from 14 January to 21 January at 11:00 because he's ill.
M 2026-01-21 dent_done | Dental check-up done: one small filling needed on the lower left molar, booked for 4 February at 08:00; cleaning cost €95 out of pocket.
M 2026-01-23 blood | Blood test results from Dr. Sommer: vitamin D low at 18 ng/ml, ferritin fine, TSH normal. She prescribed vitamin D 1,000 IU daily.
M 2026-04-27 vitd | Follow-up with Dr. Sommer: vitamin D only up to 24 ng/ml, so the dose goes up to 2,000 IU a day until the next check in October.
M 2026-02-11 - | Dr. Sommer wants a follow-up blood test in about three months; ask for the vitamin D and iron panel again.
M 2026-03-09 eyes | Eye test at Optik Wendt: prescription now −1.75 left, −2.00 right; new glasses (tortoiseshell Lindberg frames) ordered for €420 after insurance.
M 2026-03-26 - | Picked up the new glasses from Optik Wendt; they also adjusted the old pair as a spare.
M 2026-04-13 physio | Physio for my right shoulder with Lea Brandl (Physiotherapie Karl-Heine-Straße): six sessions, first on 20 April at 17:30, prescription from Dr. Sommer.
M 2026-05-25 shoulder_may | Lea Brandl says the shoulder is much better; keep doing the band exercises three times a week, last session on 1 June.
M 2026-03-16 hayfever | Birch pollen season starting: I take cetirizine 10 mg in the evening and rinse my nose; worst weeks are usually late March to late April.
M 2025-12-19 insurer | My health insurer is Saale BKK (statutory); the dental top-up policy is with Rhenania Zahn, plan ZP-80, €21.40/month.
M 2026-02-25 health_turn1 | User: I've been sleeping badly for two weeks, probably the mortgage stress plus the Atlas deadline. Dr. Sommer suggested cutting coffee after 2 pm and trying magnesium, so I'm doing that. Also my right shoulder is stiff again from the laptop, and Diego says I hunch like a question mark. Different topic: can you remind me to send Kasia the photos from Christmas? Assistant: Sorry about the sleep — noted Dr. Sommer's advice (no coffee after 2 pm, magnesium). Shoulder stiffness noted too. Reminder set to send Kasia the Christmas photos.
M 2026-05-13 health_turn2 | User: Quick one: the blood donation at the Uniklinik was fine, my haemoglobin was 13.4 so they took me. The nurse said I can come back in twelve weeks. Also I ran 8 km along the Elster without the shin hurting, first time since February! And please note Pestka's dental cleaning quote was €240, which feels steep. Assistant: Well done on both! Noted: haemoglobin 13.4 at today's donation, next donation possible in twelve weeks, the pain-free 8 km, and the €240 quote for Pestka's dental cleaning.
M 2026-08-05 - | Zweite Blutspende an der Uniklinik Leipzig am 5. August, alles gut; nächster möglicher Termin Anfang November.
M 2026-06-16 - | First appointment with Dr. Amann: blood pressure 118/76, he'll take over the vitamin D follow-up in October.
M 2026-07-22 tick | Tick bite on my left calf after the hike in the Dübener Heide; Dr. Amann says watch for a red ring for four weeks. Bitten on 19 July.
M 2026-08-18 tick_check | Tick bite check: no red ring after four weeks, all clear according to Dr. Amann.
M 2026-02-04 filling | Filling done at Dr. Reinholz: composite, €60 co-pay covered mostly by the Rhenania top-up.
M 2026-06-29 dentist_fr | Le dentiste m'a rappelé : prochain détartrage dans six mois, pas avant fin décembre ; je dois chercher un cabinet plus près de Plagwitz.
M 2026-08-10 flu | Flu vaccination planned for mid-October at Dr. Amann's; also ask about the tick-borne encephalitis booster since the last one was in 2021.

Q temp gp_new | Who is my GP now?
Q temp gp | Who was my doctor before I moved?
Q temp dent_new,dent_done,ru12 | When did the January dental check-up finally take place?
Q temp dent_old | What was the original time of the January check-up with Dr. Reinholz?
Q temp vitd,vitd_caps | What vitamin D dose am I on now?
Q temp blood | What vitamin D dose did Dr. Sommer first prescribe?
Q temp shoulder_may | How was my shoulder doing at the end of May?
Q para eyes | What is the strength of my latest spectacles?
Q para hayfever,purifier | What do I do about my spring allergy?
Q para insurer | Which fund covers my medical costs by law?
Q para tick,tick_check,st13,lt20 | What creature attached itself to me on a woodland walk?
Q para health_turn1 | What did my physician advise for my insomnia?
Q para physio,physio1 | How many treatment visits am I getting for my arm joint, and when does it begin?
Q anch insurer | What is plan ZP-80?
Q anch health_turn2 | What was my haemoglobin level at the blood donation?
Q anch filling | What did the €60 co-pay cover?
Q anch blood | What were my results when vitamin D was 18 ng/ml?
Q ent physio,dad_turn,shoulder_may | Who is Lea Brandl?
Q ent gp,blood,vitd | Who is Dr. Anke Sommer?
Q ent dent_old | Where is Dr. Reinholz's practice?
Q mult:de eyes | Wie viel haben meine neuen Brillengläser gekostet und wo habe ich sie bestellt?
Q mult:fr hayfever | Quel médicament est-ce que je prends contre le pollen de bouleau ?
Q mult:es tick | ¿Cuándo me picó la garrapata y dónde?
Q mult:pl gp_new | Kto jest moim nowym lekarzem rodzinnym?
Q mult:en dentist_fr | When is my next scale-and-polish due, according to the dentist's call in June?
Q near - | What was my haemoglobin in February? || stored: 13.4 at the May donation; no February value
Q near - | When is my appointment with Dr. Reinholz on 14 February? || stored: check-up 14 → 21 January, filling 4 February || absent:14 February
Q near - | What is my cholesterol level? || stored: vitamin D, ferritin, TSH and blood pressure only || absent:cholesterol
Q near - | Which optician made Diego's glasses? || stored: only my glasses from Optik Wendt
Q near - | What did Dr. Sommer say about my knee? || stored: she dealt with vitamin D and the shoulder prescription; it was Tata's knee that was operated
Q near - | Which vaccine did I get last October? || stored: only the flu shot planned for mid-October 2026 and a TBE booster in 2021
""")

# ---------------------------------------------------------------- pets
CHUNKS.append(r"""
M 2025-12-01 pets | Our pets: Biscuit, a five-year-old tricolour beagle, and Pestka, a nine-year-old grey tabby cat who came with me from Kraków.
M 2025-12-13 vet_old | Vet: Tierarztpraxis Auenwald, Dr. Ulrike Kühn, Lützowstraße 33 in Gohlis; both pets are registered there.
M 2026-06-11 vet_new | Moved both pets to Tierklinik Plagwitz (Dr. Arben Hasani) since Auenwald is now 40 minutes away; records transferred on 11 June.
M 2026-01-15 biscuit_food_old | Biscuit eats Wolfsblut chicken & rice kibble, 180 g a day split into two meals.
M 2026-03-13 biscuit_food_new | Dr. Kühn thinks Biscuit's itching is a chicken allergy: switched him to a salmon and potato kibble (Platinum), still 180 g a day, no chicken treats.
M 2026-04-02 itch_april | Biscuit's itching is much better three weeks after the switch to salmon kibble; Dr. Kühn says stay on it.
M 2026-07-06 booster | Biscuit's annual booster (DHPPi + leptospirosis) is due; booked at Tierklinik Plagwitz for 25 July at 16:15.
M 2026-07-25 booster_done | Biscuit had his booster today at Tierklinik Plagwitz; Dr. Hasani also weighed him: 13.8 kg, a bit heavy.
M 2026-07-14 eardrops | Biscuit has an ear infection again; Dr. Hasani prescribed Osurnia ear gel, two doses a week apart, €86 including the exam.
M 2026-02-18 pestka_kidney | Pestka's blood work: kidney values slightly raised (SDMA 16); Dr. Kühn wants a recheck in six months and suggests renal wet food.
M 2026-08-17 pestka_recheck | Pestka's kidney recheck at Tierklinik Plagwitz: SDMA 15, stable; stay on the renal food, next check in February.
M 2026-05-05 pestka_teeth | Pestka needs a dental cleaning under anaesthesia; Auenwald quoted €240, maybe get a second quote after the move.
M 2026-08-28 pestka_teeth_booked | Pestka's dental cleaning booked at Tierklinik Plagwitz for 15 September, 08:00, fasting from midnight; quote €195.
M 2026-01-27 hundesteuer | Dog tax (Hundesteuer) for Biscuit: €96 a year, paid to the city of Leipzig every 15 February; tag number 4471.
M 2026-01-31 dog_ins | Biscuit's liability insurance is with Hanse Tierschutz, policy HT-58213, €4.90 a month; mandatory in Saxony? Not strictly, but the landlord wanted it.
M 2026-02-22 sitter | Dog sitter when we travel: Lotte Schrader, a student from the Gohlis building, €25 a day, she walks Biscuit three times.
M 2026-03-28 lotte_easter | Lotte will look after Biscuit and Pestka from 2 to 8 April while we're in Valencia; keys handed over on 1 April.
M 2026-06-26 sitter_new | New pet sitter near Kastanienallee: Jana from the Pfotenhilfe dog-walking collective, €28 a day; she'll cover the Algarve trip.
M 2026-04-18 - | Hundeschule Leipzig-West: Biscuit signed up for a recall course, four Saturday mornings from 9 May, €120.
M 2026-05-31 recall_course | Biscuit finished the recall course; the trainer, Mirko, says practise with the whistle daily and don't let him off-lead near the Elster.
M 2026-03-01 pet_turn1 | User: Biscuit stole an entire loaf of Diego's sourdough off the counter today and then looked at me like it was my fault. He's fine, just very full. Pestka, meanwhile, has started sleeping in the laundry basket, so everything we own is grey. Unrelated: I have to decide by Friday whether I'm going to the Lyon conference in June or sending Priya instead. Assistant: Poor sourdough! Noted Pestka's new laundry-basket habit. Reminder: decide about the Lyon conference (you or Priya) by Friday.
M 2026-05-18 pet_turn2 | User: The move was brutal for Pestka — she hid under the bath for a whole day and only came out for tuna. Biscuit, of course, loved it: new smells everywhere. We bought a Feliway diffuser for the living room which seems to help. Also the movers chipped the top of the bookshelf; Umzüge Pohl said to send photos and they'll pay for it. Assistant: Poor Pestka. Noted: Feliway diffuser in the living room, and to send the bookshelf damage photos to Umzüge Pohl for compensation.
M 2026-06-01 - | Umzüge Pohl agreed to pay €140 for the chipped bookshelf; money arrives within two weeks.
M 2026-08-03 pet_turn3 | User: It's so hot that Biscuit refuses to walk after 10 am. We've switched to a 6 am walk along the canal and a late one after nine. Jana from Pfotenhilfe says lots of dogs are doing the same. Pestka is fine, she just lies on the cool bathroom tiles all day. Can you also remind me that the dog tax reminder letter from the city needs an answer because they still have the Lindenweg address? Assistant: Noted the heat routine (6 am and after-9 pm walks). Reminder: reply to the city's dog-tax letter and update the address from Lindenweg.
M 2026-02-14 pestka_bday | Pestka hat Geburtstag am 14. Februar (geschätzt, sie kam aus dem Tierheim in Krakau); sie bekommt eine Dose Thunfisch extra.
M 2026-04-26 sock | Biscuit a mangé une chaussette au parc ; le vétérinaire de garde a dit d'attendre, et tout est ressorti le lendemain.
M 2026-06-22 door | Biscuit ha aprendido a abrir la puerta de la terraza con la pata; hay que poner un pestillo.

Q temp vet_new | Which vet do the pets go to now?
Q temp vet_old,vet_new | Where were the pets registered before the move?
Q temp biscuit_food_new,itch_april | What does Biscuit eat now?
Q temp biscuit_food_old | What food was Biscuit on before his allergy?
Q temp sitter_new,st15,algarve_turn,lt21 | Who looks after the pets now when we travel?
Q temp sitter,lotte_easter,lotte_xmas | Who was our dog sitter when we lived in Gohlis?
Q temp pestka_teeth_booked | When is Pestka's dental cleaning, and what does it cost now?
Q temp pestka_recheck,ru17 | How were Pestka's kidney values at the August recheck?
Q temp itch_april | How was Biscuit's itching in early April?
Q ent vet_new,eardrops,booster_done | Who is Dr. Arben Hasani?
Q ent pets | What kind of animal is Pestka?
Q ent recall_course | Who is Mirko?
Q ent sitter | Who is Lotte Schrader?
Q para hundesteuer | How much is the municipal levy for owning our hound annually?
Q para dog_ins | Which company covers damage our beagle might cause?
Q para eardrops,family_turn | What medicine was given for the beagle's otitis?
Q para pet_turn2 | How did the cat cope with relocating?
Q para pet_turn3 | When do we take the pup out during a heatwave?
Q anch booster,work_turn3,booster_done,ru22 | What is happening on 25 July at 16:15?
Q anch dog_ins | What is policy HT-58213?
Q anch hundesteuer | What is tag number 4471?
Q anch pestka_kidney | What did SDMA 16 mean for Pestka?
Q anch eardrops,family_turn | What was the €86 vet charge for?
Q mult:de vet_new | Bei welchem Tierarzt ist Biscuit jetzt in Behandlung?
Q mult:de biscuit_food_new | Welches Futter bekommt Biscuit wegen seiner Allergie?
Q mult:pl pestka_kidney | Co wyszło w badaniu krwi Pestki w lutym?
Q mult:es sitter_new,st15,algarve_turn,lt21 | ¿Quién cuida a los animales cuando nos vamos al Algarve?
Q mult:fr booster,booster_done,work_turn3,ru22 | Quand est-ce que Biscuit a son rappel de vaccin ?
Q mult:en pestka_bday | When is Pestka's birthday, and where did she come from?
Q mult:en sock | What did Biscuit swallow at the park?
Q mult:en door | Which door has Biscuit learned to open?
Q near - | When is Biscuit's dental cleaning? || stored: the dental cleaning is for Pestka, the cat
Q near - | What is dog tax tag number 4417? || stored: tag number 4471 || absent:4417
Q near - | How much does Biscuit weigh in kilograms at the January check? || stored: 13.8 kg at the July booster; no January weight
Q near - | What is Dr. Kühn's first name at Tierklinik Plagwitz? || stored: Dr. Ulrike Kühn is at Auenwald; Plagwitz is Dr. Hasani
Q near - | When is Pestka's booster vaccination? || stored: only Biscuit's booster (25 July)
Q near - | What breed is Lotte's dog? || stored: Lotte is our former dog sitter; nothing about her own dog
""")

# ---------------------------------------------------------------- travel
CHUNKS.append(r"""
M 2026-01-22 lofoten | Summer holiday booked: Lofoten, 10–24 July, cabin (rorbu) in Reine for two weeks, €2,380; flights Leipzig–Oslo–Bodø, ferry to Moskenes.
M 2026-04-12 lofoten_cancel | Cancelled the Lofoten trip because of the Atlas slip — launch is now 30 June and I can't be away in July. The rorbu refunded €1,900 of €2,380; the flights were refunded as vouchers.
M 2026-04-29 algarve | New summer plan: Algarve, 8–22 August, a small house near Aljezur (Casa da Figueira), €1,640 for two weeks; flights Berlin BER–Faro, booking ref KTR4QE.
M 2026-07-19 rental | Car rental for the Algarve: a Fiat 500L from Faro airport, 8–22 August, €412 with full insurance, pickup desk Guerin.
M 2026-08-23 algarve_back | Back from the Algarve. Best day: kayaking from Odeceixe; worst: the sunburn on day two. Diego wants to go back next year for the cataplana alone.
M 2026-08-09 algarve_turn | User: First full day in Aljezur. The house is tiny but the terrace looks straight at the hills and there's a fig tree, hence the name. Diego already found the fish market in Sagres. I keep checking Slack, which I promised not to do — Sunil said he'd cover anything Atlas-related. Jana sent a photo of Biscuit sleeping on her feet, so that's fine. Tomorrow: Praia da Amoreira if the wind dies down. Assistant: Sounds idyllic. Noted that Sunil is covering Atlas while you're away — and maybe mute Slack! Enjoy Praia da Amoreira.
M 2026-01-26 bahncard | BahnCard 50, 2nd class, bought 1 November 2025 — valid until 31 October 2026; €244. Renewal is automatic unless cancelled six weeks before.
M 2026-03-11 krakow_march | Train for Mama's 65th: 13 March, Leipzig Hbf 07:12 via Wrocław Główny, arrives Kraków 15:40; back 16 March, seat 45 in coach 7 both ways.
M 2026-05-21 passport | My Polish passport expires 3 November 2026; renewal appointment at the Polish consulate in Berlin on 9 September at 10:20.
M 2026-06-25 dni | Diego's DNI expires in January 2027; the Spanish consulate in Berlin has appointments only via the online queue, so he's trying every Monday.
M 2026-02-28 hamburg | Day trip to Hamburg on 5 March to see Nordhafen Freight: ICE 06:14 from Leipzig, back 20:47; lunch with Maren Ost at Fischereihafen Restaurant.
M 2026-03-07 hamburg_turn | User: Hamburg was good. Maren is tough but fair — she agreed to a pilot at the Bremen depot if we can show the customs export working. The Fischereihafen lunch was amazing, I had the Finkenwerder Scholle. Train back was 40 minutes late, so I got home at half nine and Biscuit had eaten a tea towel. Also: Tobias wants to do the roadmap review on the 19th instead of the 12th because of my notary thing. Assistant: Great outcome. Noted: Bremen pilot conditional on customs export, and the roadmap review moved to 19 March because of the notary appointment on the 12th.
M 2026-06-13 lyon_turn | User: Lyon recap — the talk went better than I feared, lots of questions about the outbox pattern. Camille came to watch and then dragged me to a bouchon in the Vieux Lyon where I ate something I still can't identify. Her daughter Inès is six now and speaks German better than me apparently (bilingual school). Flight home was fine. I owe Camille a visit in Leipzig, she's thinking October. Assistant: Congratulations on the talk! Noted: Camille may visit Leipzig in October, and her daughter Inès (6) is at a bilingual school.
M 2026-06-07 lyon_flight | Flights for Lyon: 10 June Leipzig–Frankfurt–Lyon LH 1074, back 12 June; aisle seats requested.
M 2025-12-23 travel_pref | Travel preferences: aisle seat on planes, quiet coach on trains, no flights before 7 am if avoidable, and trains for anything under six hours.
M 2026-05-01 dticket | Diego cancelled his Deutschlandticket from July since he'll cycle to Feldküche; mine continues (€58 a month via the LVB app).
M 2026-06-27 poznan | Poznań for Magda's wedding: we drive on 18 September with the ID.3, charging stop at Świebodzin; hotel Dwór Lipowy for 19–20 September.
M 2026-02-06 - | Weekend in Dresden 14–15 February for Valentine's: Hotel Suitess, dinner at Genuss-Atelier, Semperoper ballet ticket for Giselle on the 14th.
M 2026-02-16 - | Dresden weekend was lovely; the ballet was better than the dinner. Diego says next year somewhere with a sauna.
M 2026-08-29 camille40 | Voyage à Lyon en octobre pour le mariage de Camille ? Non, c'est en fait l'anniversaire de ses quarante ans, le 24 octobre ; elle nous invite tous les deux.
M 2026-04-05 kazimierz | Wycieczka do Kazimierza Dolnego z Tomkiem w maju? Raczej nie, bo przeprowadzka; przełożymy na wrzesień.
M 2026-07-01 travel_turn1 | User: Trying to plan the autumn and it's a mess. Consulate in Berlin on 9 September for my passport, Magda's wedding on the 19th, Carmen here 10–17 October, Camille's 40th in Lyon on 24 October, and Tomek wants a sailing weekend in Gdańsk at some point. Sunil also mentioned a leadership offsite in Munich in late October. I need a calendar that isn't my brain. Assistant: Here's the autumn so far: 9 Sept consulate (passport), 19 Sept Magda's wedding, 10–17 Oct Carmen's visit, 24 Oct Camille's 40th in Lyon, a Munich leadership offsite in late October (date TBC), and a sailing weekend with Tomek (unscheduled).
M 2026-07-12 munich | Leadership offsite in Munich confirmed for 27–28 October at the Platform team's office; Renate is hosting.
M 2026-08-26 diego_nolyon | Lyon trip for Camille's 40th: flights on 23 October, back 25 October; Diego can't come after all because of a Feldküche event.

Q temp algarve | Where are we going for the summer holiday after the change of plan?
Q temp lofoten,lofoten_cancel | What summer trip did we originally book?
Q temp lofoten_cancel | Why did we cancel the Norway trip, and how much was refunded?
Q temp algarve_back,st16,algarve_turn | How did the Algarve holiday go?
Q temp dticket | Does Diego still have a Deutschlandticket?
Q temp diego_nolyon | Is Diego still coming with me to Camille's 40th in Lyon?
Q para passport | When does my travel document run out, and when do I go to have it replaced?
Q para travel_pref,lyon_flight | Where do I like to sit when flying?
Q para rental | Which vehicle did we hire in Portugal?
Q para bahncard | Until when is my railway discount pass good for?
Q para hamburg_turn | What did the haulage firm's dispatcher promise during my visit?
Q anch algarve | What is booking ref KTR4QE?
Q anch lyon_flight | What is LH 1074?
Q anch krakow_march | Which train did I take on 13 March?
Q anch munich | What is happening on 27–28 October?
Q anch poznan | Where do we charge the car on the way to Poznań?
Q ent lyon_turn | Who is Inès?
Q ent rental | What is Guerin?
Q ent algarve,algarve_turn | What is Casa da Figueira?
Q mult:es algarve | ¿Cuánto nos costó la casa del Algarve?
Q mult:pl passport | Kiedy mam wizytę w konsulacie w sprawie paszportu?
Q mult:de lofoten_cancel | Warum haben wir die Reise zu den Lofoten storniert?
Q mult:fr travel_turn1 | Quels sont nos projets pour l'automne, d'après mon message de juillet ?
Q mult:fr bahncard | Jusqu'à quand ma BahnCard est-elle valable ?
Q mult:en camille40,travel_turn1 | When is Camille's 40th birthday, and who is invited?
Q mult:en kazimierz | What happened to the Kazimierz Dolny trip with Tomek?
Q near - | What is booking ref KTR4EQ? || stored: KTR4QE (Algarve flights) || absent:KTR4EQ
Q near - | When does Diego's Polish passport expire? || stored: my Polish passport (3 November 2026); Diego has a Spanish DNI
Q near - | Which hotel did we stay at in Reine? || stored: a rorbu cabin was booked but the Lofoten trip was cancelled
Q near - | What is LH 1047? || stored: LH 1074 (Lyon flight) || absent:LH 1047
Q near - | When is the leadership offsite in Berlin? || stored: the offsite is in Munich (27–28 October)
Q near - | What did I eat in Vienna? || stored: lunch in Hamburg and a bouchon in Lyon; no Vienna trip || absent:Vienna
""")

# ---------------------------------------------------------------- hobbies: cello, climbing, running, books, baking, games
CHUNKS.append(r"""
M 2025-12-17 cello_old | Cello lessons with Irene Falk at the Musikschule Johann Sebastian Bach, Wednesdays 18:00–18:45, €38 per lesson; currently working on the Bach Suite No. 1 prelude.
M 2026-04-20 cello_new | Irene Falk has moved to Hamburg, so from May my cello teacher is Jakob Held, same music school, Mondays at 19:00.
M 2026-05-11 cello_turn | User: First lesson with Jakob. Very different from Irene — he had me play open strings for twenty minutes and then told me my bow hold is 'creative'. I think I like him. He wants me to do the Breval sonata in C before going back to the Bach prelude. Also, completely separate, I need to pick up the dry cleaning before Thursday because Diego's suit is in there for the anniversary dinner. Assistant: Sounds like a promising start. Noted: Breval Sonata in C before the Bach prelude, and pick up the dry cleaning (Diego's suit) before Thursday.
M 2026-06-19 - | Cello: summer recital at the music school on 4 July at 16:00; Jakob wants me to play the first movement of the Breval.
M 2026-07-05 recital | Recital went okay — I rushed the middle section of the Breval but nobody noticed except Jakob. Diego filmed it.
M 2026-01-11 cello_rent | My cello is rented from Geigenbau Lindner: €32 a month, rent-to-own, 60% of paid rent counts towards buying it.
M 2025-12-21 boulder_old | Bouldering: 10-visit card at Blockhaus Leipzig in Gohlis, €115; I go with Hannah after work about once a week.
M 2026-06-04 boulder_new | Switched bouldering gyms after the move: monthly membership at Kletterwerk Süd in Plagwitz, €49 a month, no minimum term. Hannah comes along on Thursdays.
M 2026-02-05 - | Climbed my first 6A at Blockhaus tonight (the yellow overhang). Hannah filmed it, of course.
M 2026-01-17 halfmar | Signed up for the Leipzig Half Marathon on 19 April; goal under 2:05. Training plan: three runs a week, long run on Sundays.
M 2026-02-24 shin | Shin splints in my left leg; the sports doctor says no running for three weeks, then gradual return.
M 2026-03-17 tenk | Switched my Leipzig Marathon entry from the half to the 10 km race on 19 April because of the shin splints; the organisers charged €8 to change.
M 2026-04-19 race | Ran the 10 km at the Leipzig Marathon in 54:12 — pain-free, and Diego and Biscuit cheered at kilometre 7.
M 2026-08-08 run_plan | Next goal: the Leipzig Night Run on 10 October (10 km), aim under 52 minutes; Hannah might join.
M 2026-01-24 bookclub_old | Spanish book club (Club de lectura Leipzig) meets on the last Thursday of each month at 19:30 at Café Milchbar on Gottschedstraße; organiser Beatriz.
M 2026-04-23 bookclub_new | The Spanish book club has moved from Café Milchbar to the Stadtbibliothek (room 2.14), same time, because the café closes at six now.
M 2026-02-26 - | Book club: we're reading "Los años extraordinarios" by Rodrigo Cortés for March; I'm halfway through.
M 2026-05-28 panza | Club de lectura de mayo: hablamos de «Panza de burro» de Andrea Abreu; a Beatriz le encantó, a mí me costó el lenguaje canario.
M 2026-07-31 - | Book club pick for September: "La hija del este" by Clara Usón; Beatriz is lending me her copy.
M 2026-01-03 sourdough | My sourdough starter is called Zyta; feed her 1:1:1 rye flour and water every evening when she lives on the counter, weekly when in the fridge.
M 2026-03-08 - | Sourdough experiment: 75% hydration with 20% spelt, 18-hour cold retard — best crumb so far. Recipe in my notes app.
M 2026-06-28 - | Gave a jar of Zyta to Mr. Okafor; he wants to bake Nigerian agege bread with it, which apparently isn't traditionally sourdough.
M 2026-02-07 games | Board game evening at Jonas's place on the first Saturday of each month; current favourite is Cascadia, and Jonas hates losing at Wingspan.
M 2026-03-29 games_turn | User: Games night at Jonas's was a riot. We tried Ark Nova for the first time and it took four hours, including the rules explanation, which Jonas did with slides. Marta (his girlfriend) won by a mile. I want to buy Cascadia for ourselves so Diego and I can play at home. Oh and Jonas says his band is playing at Noch Besser Leben on 18 April, we should go. Assistant: Noted: you'd like to buy Cascadia, and Jonas's band plays at Noch Besser Leben on 18 April.
M 2026-04-04 - | Bought Cascadia for €39 at Spielwiese on Karl-Liebknecht-Straße; Diego beat me twice already.
M 2026-07-16 hobby_turn | User: Honest moment: I'm doing too many things. Cello on Mondays, bouldering Thursdays, book club once a month, running, and now Jonas wants me in a pub quiz team. I said yes to the quiz because it's only every other Tuesday at the Killiwilly, but I think the book club might have to go after the September meeting. Anyway — Diego's supper-club idea isn't happening before winter. Assistant: That's a lot. Noted: pub quiz every other Tuesday at the Killiwilly with Jonas's team, considering leaving the book club after September, and no supper club before winter.
M 2026-08-13 - | Pub quiz team name is "Quizzy McQuizface" (Jonas's idea, not mine); we came fourth out of fourteen on the first night.
M 2026-03-22 - | Knitting is not for me: abandoned the scarf after 30 cm. Giving the merino wool to Kasia, who actually knits.
M 2026-05-17 - | Photography: bought a used Fujifilm X-T30 with the 18–55 lens for €610 from a seller in Connewitz; want to take it to the Algarve.
M 2026-08-24 photo | Printed twelve Algarve photos at Foto Quelle on Karl-Heine-Straße for the hallway, 30×40 cm, €11 each.
M 2026-06-17 cello_wed | Jakob kann am 22. Juni nicht, deshalb ist die Cellostunde in dieser Woche ausnahmsweise am Mittwoch, 24. Juni, um 18 Uhr.
M 2026-03-14 notes_fr | Mes notes pour le club de lecture : j'ai trouvé la fin des « Años extraordinarios » trop longue, mais le style est drôle.

Q temp cello_new | Who teaches me cello now?
Q temp cello_old | When were my cello lessons before the teacher changed?
Q temp boulder_new | Which bouldering gym do I use now?
Q temp boulder_old | What bouldering pass did I have in Gohlis?
Q temp bookclub_new | Where does the Spanish book club meet now?
Q temp bookclub_old | Where did the book club meet originally?
Q temp tenk,race,st26,ru05 | Which race did I end up running on 19 April?
Q temp halfmar | What was my original goal for the April race?
Q temp hobby_turn | Which hobby was I thinking of dropping in July?
Q para cello_rent,cello_buyout | What does my stringed instrument set me back regularly, and can it become mine eventually?
Q para sourdough | What is the name of my bread culture, and how often does she need a meal?
Q para race | What was my finishing time at the April race?
Q para shin | Why did I have to take a break from jogging in late winter?
Q para photo,lg07 | What did I hang in the corridor from our summer pictures?
Q para games | At which tabletop pastime does my friend sulk after being beaten?
Q anch race | What did I run in 54:12?
Q anch run_plan,carmen_visit,travel_turn1 | What is on 10 October?
Q anch games_turn,nacht_gig,gig_turn | Who is playing at Noch Besser Leben on 18 April?
Q anch recital | What happened at the recital on 4 July?
Q ent bookclub_old | Who organises the Spanish book club?
Q ent games_turn,marta_nurse | Who is Marta?
Q ent cello_new,cello_turn | Who is Jakob Held?
Q ent cello_old,cello_new | Who is Irene Falk?
Q mult:de boulder_new | Wie viel kostet mein Monatsbeitrag in der Kletterhalle?
Q mult:es bookclub_new | ¿Dónde se reúne ahora el club de lectura?
Q mult:pl sourdough | Jak się nazywa mój zakwas?
Q mult:fr cello_new | Qui est mon nouveau professeur de violoncelle ?
Q mult:es race | ¿En cuánto tiempo corrí los 10 km en abril?
Q mult:en cello_wed | When was my cello lesson in the week of 22 June?
Q mult:en notes_fr | What did I think of the ending of Los años extraordinarios?
Q mult:en panza | Which book did the club discuss in May, and how did Beatriz like it?
Q near - | What time did I run the half marathon on 19 April? || stored: I switched to the 10 km and ran 54:12
Q near - | When is the cello recital on 4 June? || stored: the recital was on 4 July || absent:4 June
Q near - | Which book is the club reading for October? || stored: picks for March, May and September only
Q near - | How much did Diego pay for Ark Nova? || stored: Ark Nova was played at Jonas's; we bought Cascadia for €39
Q near - | What is Jakob Held's phone number? || stored: only his teaching slot and school
Q near - | When does Hannah's band play? || stored: it is Jonas's band (18 April)
""")

# ---------------------------------------------------------------- car, money, contracts, orders
CHUNKS.append(r"""
M 2025-12-24 skoda | Our car: 2014 Skoda Octavia Combi, petrol, 148,000 km, plate L-OB 2718; serviced at Autohaus Merkel in Gohlis.
M 2026-01-19 tyres | Winter tyres fitted at Autohaus Merkel on 19 January, €60; summer tyres stored there until April (storage €45 a season).
M 2026-04-07 car_sold | Sold the Skoda Octavia to a dealer in Markkleeberg for €6,200; handed over with both keys and the service book.
M 2026-04-15 id3 | Bought a used VW ID.3 Pro (2021, 58 kWh, 41,000 km) for €21,900 from Autohaus Elster; new plate L-DM 419.
M 2026-04-17 car_turn | User: The ID.3 drives like a fridge on wheels, in a good way — so quiet. Diego keeps turning the radio up to hear the engine that isn't there. Range display says 340 km but the seller warned us it's more like 280 in winter. We need to sort out a charging card; Marek swears by the Ladeverbund Mitte one. Also the Skoda money already arrived, so we're €6,200 richer for about a week. Assistant: Congrats on the ID.3! Noted: realistic winter range around 280 km, get a charging card (Marek recommends Ladeverbund Mitte), and the €6,200 from the Skoda sale has arrived.
M 2026-04-25 charge_card | Charging card: Ladeverbund Mitte, 39 ct/kWh AC and 49 ct/kWh DC, no monthly fee; card number ends in 7730.
M 2026-04-16 carins_old | Car insurance for the Skoda was with Allsecur, €38 a month; cancelled with the sale.
M 2026-04-16 carins_new | Car insurance for the ID.3: Elbtal Direkt, fully comprehensive with €300 excess, €54 a month, policy ED-KF-66120.
M 2026-06-23 - | ID.3 software update 3.2 done at the VW Zentrum Leipzig-Nord; the infotainment no longer freezes on cold starts.
M 2026-07-18 - | Parking permit for Kastanienallee (Bewohnerparkausweis zone P7) approved: €30.70 for a year, valid from 20 July.
M 2026-02-12 tax | Tax return 2025 handed to our adviser, Frau Lindqvist (Steuerberatung Lindqvist, Gohliser Str. 21); her fee is about €480.
M 2026-05-29 tax_done | Tax assessment 2025 arrived: refund of €1,240, paid out on 5 June. Frau Lindqvist's invoice was €465.
M 2026-01-02 savings_old | Savings: standing order of €400 on the 1st of each month from the joint account to the DKB savings pot; ETF plan €150 a month on top.
M 2026-06-30 savings_new | From July the monthly savings transfer goes up from €400 to €550, since Diego's new job pays more; the ETF plan stays at €150.
M 2026-01-05 joint | Household money: joint account at GLS Bank for rent, bills and food; I pay in 60%, Diego 40% (changes to 50/50 when his salary rises).
M 2026-07-01 joint_new | From July Diego and I split the joint account 50/50 now that his Feldküche salary is higher.
M 2025-12-26 phone_old | Mobile plan: Brisa Mobile, 20 GB, €17.99/month, contract ends 31 May 2026.
M 2026-06-01 phone_new | Switched my mobile plan to Kolibri Mobil: 40 GB for €14.99 a month, monthly cancellable; kept the same number.
M 2026-03-04 streaming | Cancelled Kinoflix (€13.99/month) from April — we barely use it; keeping the music family plan that Diego pays.
M 2026-02-09 newspaper | Ended the LVZ digital subscription at the end of February; reading the Guardian and Gazeta Wyborcza online instead.
M 2026-05-23 hausrat | Contents insurance (Hausratversicherung) for Kastanienallee: Saale Versicherung, sum insured €65,000, €11.20 a month, policy SV-HR-4402.
M 2026-01-14 haftpflicht | Personal liability insurance covers both of us: Saale Versicherung, policy SV-PH-3318, €6.40 a month.
M 2026-03-23 chair | Order 88-4410 from Büromöbel Kranich: ergonomic desk chair (Hag Capisco) for my home office, €689, delivery in 3 weeks.
M 2026-03-23 - | Order 88-4401 from Büromöbel Kranich: two monitor arms, €118, shipped separately.
M 2026-04-13 chair_deliv | Order 88-4410 delivered; the chair is great but the armrests had to be fitted by hand.
M 2026-05-10 lamp | Ordered a floor lamp (Lindby Arlo) from Lampenwelt, order LW-730216, €129, for the reading corner.
M 2026-05-24 lamp_return | Returned the Lindby Arlo lamp (order LW-730216): too yellow. Refund of €129 confirmed on 24 May.
M 2026-06-14 sofa | New sofa ordered from Sofacompany: Mia 3-seater in forest green velvet, order SC-55810, €1,349, delivery 6–8 weeks.
M 2026-08-07 sofa_delay | Sofacompany says the Mia sofa (SC-55810) is delayed to the end of September because of a fabric shortage.
M 2026-02-17 money_turn | User: Doing the boring admin. The mortgage offer is fine, but I want a rainy-day fund of at least €10,000 before we move, and right now we have €7,800. If we keep the €400 a month and put in the tax refund, we'll get there by summer. Diego thinks we should also get rid of the Skoda and buy an electric car, which I'm not against but not before the move. Separately, Hannah's birthday is on 3 March, remind me to get her something plant-related. Assistant: Noted: goal of a €10,000 rainy-day fund (currently €7,800), car decision after the move, and Hannah's birthday on 3 March — something plant-related.
M 2026-03-02 fern | Hannah's birthday present: a staghorn fern in a hanging pot from Grünwerk, €34. She loved it.
M 2026-08-16 money_turn2 | User: Post-holiday money check: the Algarve came to about €3,900 all in, a bit over the €3,500 we planned, mostly the rental car and eating out. Emergency fund is at €10,600 so we're fine. The sofa refund situation is annoying — Sofacompany offered a 10% voucher for the delay, which I accepted. Next big thing is Christmas flights to Kraków, which I should book before they get expensive. Assistant: Noted: Algarve total about €3,900 (budget €3,500), emergency fund €10,600, accepted Sofacompany's 10% voucher for the delay, and book Christmas flights to Kraków soon.
M 2026-04-02 kfz | Die Kfz-Steuer für den ID.3 ist bis 2030 befreit, weil er ein Elektroauto ist; der Bescheid vom Hauptzollamt ist im Ordner „Auto“.
M 2026-07-27 przelew | Przelew dla Tomka: 150 zł za połowę prezentu dla cioci Basi na imieniny, zrobione 27 lipca.
M 2026-06-09 kolibri_es | Kolibri Mobil: la factura de junio fue de 14,99 €, sin consumo extra; el roaming en Portugal está incluido.

Q temp id3,car_turn,ru21 | What car do we drive now?
Q temp skoda,car_sold,ru21 | What car did we have before the ID.3?
Q temp phone_new | What mobile plan am I on now?
Q temp phone_old | Which mobile provider did I have before June?
Q temp savings_new | How much goes into savings each month now?
Q temp savings_old,money_turn | How much were we saving per month at the start of the year?
Q temp joint_new | How do Diego and I split the joint account now?
Q temp joint | What was our split of the joint account before July?
Q temp carins_new | Who insures our car now?
Q temp streaming | Do we still have Kinoflix?
Q temp newspaper | What did I decide about the LVZ subscription in February?
Q temp sofa_delay,money_turn2 | What is the latest on the sofa delivery?
Q para tax_done,lg04 | How much did the revenue office give back for last year?
Q para tyres | When were the cold-weather wheels put on?
Q para chair,chair_deliv,ru18 | What seating did I buy for my study?
Q para hausrat | How are our belongings covered against theft or fire?
Q para money_turn2 | How much did the Portuguese getaway set us back altogether?
Q para charge_card,car_turn | Which provider do I use to top up the battery of the electric vehicle?
Q anch chair,chair_deliv | What was order 88-4410 for?
Q anch sofa,sofa_delay | What is order SC-55810?
Q anch lamp,lamp_return | What happened with order LW-730216?
Q anch carins_new | What is policy ED-KF-66120?
Q anch haftpflicht | What does policy SV-PH-3318 cover?
Q anch id3 | Which car has the plate L-DM 419?
Q ent tax,tax_done | Who is Frau Lindqvist?
Q ent skoda,tyres | Where was the Skoda serviced?
Q ent hausrat,haftpflicht | Which policies do we have with Saale Versicherung?
Q mult:de tax_done,lg04 | Wie hoch war unsere Steuererstattung für 2025?
Q mult:de phone_new | Wie viel kostet mein neuer Handyvertrag im Monat?
Q mult:pl id3 | Ile zapłaciliśmy za używane ID.3?
Q mult:pl savings_new | Ile odkładamy co miesiąc od lipca?
Q mult:fr sofa | Quel canapé avons-nous commandé et pour quand est la livraison ?
Q mult:fr charge_card | Combien coûte le kWh avec ma carte de recharge ?
Q mult:es money_turn2 | ¿Cuánto nos gastamos en total en las vacaciones del Algarve?
Q mult:en kfz | Until when is the ID.3 exempt from vehicle tax?
Q mult:en przelew | How much did I send Tomek on 27 July, and what for?
Q mult:en kolibri_es | Is roaming in Portugal included in my phone plan?
Q near - | What was order 88-4411 for? || stored: 88-4410 (desk chair) and 88-4401 (monitor arms) || absent:88-4411
Q near - | What is policy SV-HR-4420? || stored: SV-HR-4402 (contents insurance) || absent:SV-HR-4420
Q near - | Which car has the plate L-OB 2781? || stored: L-OB 2718 (the Skoda) || absent:L-OB 2781
Q near - | How much did we sell the ID.3 for? || stored: we bought the ID.3 (€21,900) and sold the Skoda (€6,200)
Q near - | How big was the tax refund for 2024? || stored: the 2025 refund (€1,240) || absent:refund for 2024
Q near - | What is Diego's mobile plan? || stored: only my plans (Brisa, then Kolibri)
Q near - | When will the Flos floor lamp arrive? || stored: a Lindby Arlo lamp was ordered and returned; no Flos order || absent:Flos
""")

# ---------------------------------------------------------------- friends and social life
CHUNKS.append(r"""
M 2025-12-30 camille | Camille Roux, my best friend from my Erasmus year in Lyon (2009), works as a UX researcher at Crédit Saône; her husband Thomas teaches maths at a lycée.
M 2026-01-01 nye_turn | User: Happy new year! Last night was fun: Jonas and Marta came over, we did raclette, Biscuit hid under the bed from the fireworks until 2 am, and Diego made his grandmother's twelve-grapes ritual mandatory. My resolutions, since you asked last week: cello practice four times a week, one Polish novel a month, and no work email after 8 pm. Assistant: Happy new year! Noted your resolutions: cello four times a week, a Polish novel every month, and no work email after 8 pm.
M 2026-01-02 jonas_band | Jonas Weber plays bass in the band Die Nachtschicht; he works as a sound engineer at Radio Elster.
M 2026-01-24 agata_turn | User: Big news from Warsaw — Agata is pregnant! Due on 12 October, and she's already decided it's a girl even though they don't know yet. She's the only one from our school class I still talk to every week. I want to send something Polish and traditional but not kitsch. Meanwhile at work, the FW-1021 review is dragging because Priya is at a conference in Amsterdam until Thursday. Assistant: Wonderful news! Noted: Agata (Warsaw, school friend) is due on 12 October; you're looking for a traditional but not kitsch Polish baby gift.
M 2026-02-13 agata_lawyer | Agata works as an employment lawyer in Warsaw (kancelaria on Mokotowska); her husband is Piotr, a paramedic.
M 2026-03-27 agata_gift | For Agata's baby: ordered a hand-carved wooden rattle from a workshop in Zakopane and a linen blanket, 310 zł, shipping to Warsaw in May.
M 2026-04-18 gig_turn | User: Jonas's band was actually great tonight, I'd been bracing myself. Die Nachtschicht did a cover of 'Kein Liebeslied' that made Diego tear up. Marta was selling T-shirts at the merch table; I bought one for Tomek. Ran into Hannah and her new boyfriend, Leo, who's a carpenter — Diego wants to ask him about the bookshelf chip. Assistant: Sounds like a great night! Noted: T-shirt bought for Tomek, and Hannah's boyfriend Leo is a carpenter who might fix the bookshelf chip.
M 2026-05-03 - | Priya invited us to her housewarming in Schleußig on 16 May — same day as our move, so we had to say no; sent a plant instead.
M 2026-06-21 priya_turn | User: Dinner at Priya's tonight, finally. Her husband Arjun cooked a ridiculous amount of food, and their son Dev (8) beat me at chess twice. Priya's nervous about the Staff promotion committee but Sunil told me off the record it's fine. Arjun also asked whether Diego's Feldküche does weddings — his cousin is getting married in Leipzig in spring. Assistant: Sounds like a lovely evening. Noted: Priya's husband Arjun and son Dev (8), and Arjun's question about Feldküche catering a spring wedding for his cousin.
M 2026-02-28 camille_call | Long call with Camille: Thomas has been offered a teaching post in Annecy from September 2027; they're unsure. Inès wants a dog, Camille wants a fish.
M 2026-03-31 camille_wedding | Camille's wedding anniversary gift idea for next year noted: they got married on 4 August 2018 at a vineyard near Beaujolais.
M 2026-05-22 birthday_ola | My own birthday is 22 May; this year a small dinner at home with Hannah, Jonas, Marta and the Okafors, since we'd only just moved.
M 2026-05-23 birthday_done | Birthday dinner was perfect; Mr. Okafor brought jollof rice and his wife Grace brought chin chin, Diego did tortilla and pimientos.
M 2026-07-13 social_turn | User: Weekend recap. Saturday: Jonas's 38th at the Sachsenbrücke, lots of people I didn't know, one very long conversation about synthesizers. Sunday: brunch with Hannah and Leo, who are moving in together in September — they're looking in Lindenau. Leo fixed the bookshelf chip in ten minutes and refused money, so I owe him a bottle of something. Also Agata sent a scan photo, the baby looks like a bean. Assistant: Noted: Hannah and Leo moving in together in September (looking in Lindenau), you owe Leo a bottle for fixing the bookshelf, and Jonas turned 38.
M 2026-08-01 - | Bought Leo a bottle of Zubrówka and some Krakowska sausage as a thank-you for the bookshelf repair.
M 2025-12-28 - | Christmas card list: Camille & Thomas, Agata & Piotr, Babcia Irena, Frau Ritter? (no, didn't know her yet), Mr. Sauer the caretaker, Lotte.
M 2026-06-07 grace | Grace Okafor runs a tailoring shop on Zschochersche Straße; she offered to shorten Diego's suit trousers for the anniversary.
M 2026-08-21 sunil_bbq | Sunil and his wife Meera invited team leads to a barbecue on 5 September at their garden in Markkleeberg; bring a salad.
M 2026-04-01 godmother | Agata mnie pyta, czy będę matką chrzestną — chrzest pewnie w styczniu w Warszawie. Powiedziałam, że tak!
M 2026-01-18 tarte | Camille m'a envoyé la recette de la tarte aux pralines de sa grand-mère ; il faut des pralines roses de Lyon, introuvables à Leipzig.
M 2026-07-20 jonas_job | Jonas hat eine neue Stelle: ab September ist er Tonmeister am Gewandhaus, nicht mehr bei Radio Elster.

Q ent camille | Who is Camille's husband and what does he do?
Q ent camille | Who is Camille Roux?
Q ent agata_turn,agata_lawyer | Who is Agata?
Q ent priya_turn | Who is Arjun?
Q ent gig_turn,social_turn | Who is Leo?
Q ent grace,birthday_done | Who is Grace Okafor?
Q ent jonas_band,gig_turn | What band does Jonas play in?
Q para agata_gift | What did I send for my friend's newborn?
Q para camille_call | Where might my French friend's household move to?
Q para nye_turn | What did I promise myself on the first of January?
Q para sunil_bbq,bbq_salad | What should I contribute to my boss's cookout?
Q anch agata_turn | Who is due on 12 October?
Q anch birthday_ola | When is my own birthday?
Q anch camille_wedding | When did Camille and Thomas get married?
Q temp jonas_job,st19 | Where does Jonas work from September?
Q temp jonas_band,jonas_job | Where did Jonas work before his new job?
Q mult:en godmother | What did Agata ask me to be, and when is the christening?
Q mult:en tarte | What do I need for the pink praline tart, and why is it tricky?
Q near - | Who is Agata's brother? || stored: her husband Piotr; no brother
Q near - | When is Jonas's 40th birthday? || stored: he turned 38 in July
Q near - | What does Hannah's boyfriend Leo do as a plumber? || stored: Leo is a carpenter
Q near - | When is Camille's daughter Inès's school play? || stored: Inès is 6 and at a bilingual school; no school play
Q near - | Which day is Sunil's barbecue in Leipzig-Connewitz? || stored: the barbecue is at his garden in Markkleeberg on 5 September
Q near - | When did Priya's son Dev turn 10? || stored: Dev is 8
""")

# ---------------------------------------------------------------- work log: neighbours with similar ids, people and dates
CHUNKS.append(r"""
M 2025-12-01 - | FW-0998: dispatcher map shows depots in the wrong colour for colour-blind users; Hannah is redoing the palette.
M 2025-12-03 - | FW-1003: remove the legacy SOAP endpoint for Trasporti Bellini by March; Giorgio Sala has agreed in writing.
M 2025-12-05 - | FW-1012: route export to CSV drops umlauts in street names; fixed by Lina? No — Lina hadn't joined yet; Femi fixed it.
M 2025-12-10 - | Quarterly planning for Q1 done: Atlas first, then the Bellini SOAP removal, then dark mode if there's time.
M 2025-12-12 - | Hannah's design review for the depot filters: approved with two changes (bigger tap targets, no red/green pairs).
M 2025-12-17 - | Team Christmas dinner on 18 December at Auerbachs Keller, 18:30; Tobias organised it, €45 per head from the team budget.
M 2025-12-19 - | Marek upgraded the staging Kubernetes cluster to 1.29; one night of broken ingress, now fine.
M 2026-01-08 - | FW-1033: the route optimiser ignores time windows shorter than 15 minutes; Priya has a fix in review.
M 2026-01-09 sprint01 | Sprint 2026-01 goals: rate limiting (FW-1021), geocoder test fix (FW-1027), Atlas schema draft.
M 2026-01-13 - | FW-1044: add Polish translation to the driver app; Marek volunteered to review the strings.
M 2026-01-22 - | Interview loop for the data engineer opening: two candidates, neither a fit; role frozen until Q3.
M 2026-01-27 - | Release notes for 3.4.0 drafted by Tobias; I added the rate-limiting section.
M 2026-02-02 - | Customer call with Trasporti Bellini about the timezone bug: Giorgio Sala was calm but wants a written root cause by Friday.
M 2026-02-11 - | FW-1088: alert when a depot has more than 50 unassigned stops at 06:00; owner Marek.
M 2026-02-19 - | FW-1102: archive routes older than 24 months to cold storage; Femi estimates 3 days.
M 2026-02-23 - | Atlas architecture review with the platform group: approved, with a request for load tests at 3× peak.
M 2026-03-05 - | FW-1120: driver app crashes on Android 11 when the camera permission is denied; Lina's first bug.
M 2026-03-09 - | FW-1124: depot opening hours per weekday in the admin UI; Tobias wants it for the Nordhafen pilot.
M 2026-03-16 - | Atlas load test at 3× peak passed: p95 latency 410 ms versus 1.2 s on the monolith.
M 2026-03-20 - | FW-1139: export ICS2 fields in the customs CSV; blocked by FW-1270.
M 2026-04-06 - | FW-1155: map tiles blurry on 4K screens; Hannah says it's the tile server's DPI setting.
M 2026-04-23 - | Hackathon on 23 April: Lina and Femi built a "where is my truck" Slack bot; it won the audience prize.
M 2026-05-07 fw1186 | FW-1186: rate limit headers missing on 429 responses; follow-up to FW-1021, owner Priya.
M 2026-05-14 gonogo | Atlas go/no-go dry run: three blockers, all in customs export (FW-1270).
M 2026-06-02 - | QA for the customs-export rewrite started; 214 test cases, 9 failing on day one.
M 2026-06-18 - | FW-1203: driver app dark mode — not to be confused with FW-1217 (dispatcher UI dark mode).
M 2026-07-09 - | FW-1244: Atlas dashboards in Grafana for Nordhafen's ops team; owner Marek, due 24 July.
M 2026-07-23 - | FW-1251: retire the monolith's routing tables after 30 days of Atlas in production; scheduled for 10 August.
M 2026-08-11 - | Monolith routing tables retired on 11 August (FW-1251); backups kept for 90 days.
M 2026-08-26 - | Q4 planning draft: dark mode (FW-1217), the Bellini SOAP removal leftovers, and event streaming for Atlas v2.
M 2026-01-30 wt1 | User: Quick brain dump before the weekend. Priya's fix for the short time windows (FW-1033) broke two tests in the Bellini suite, so that's Monday's problem. Tobias wants a roadmap slide by Wednesday and I haven't started. Femi is off on the 6th for a family wedding in Lagos — make sure I don't schedule the Atlas schema review that day. And I'm thinking of asking for a second SRE in the Q3 budget because Marek is doing everything. Assistant: Noted: FW-1033 broke two Bellini tests, roadmap slide due Wednesday, no Atlas schema review on the 6th (Femi away at a wedding in Lagos), and a possible second SRE in the Q3 budget.
M 2026-02-25 wt2 | User: The Atlas schema review happened and it was painful but useful. Femi pointed out that the customs data model is basically from 2017, and Priya wants to separate stops from legs, which adds a week. Marek asked for a dedicated read replica so the dashboards don't hammer the primary. I said yes to both. Also the coffee machine on our floor died, and apparently that's my problem now because I'm the most senior person who drinks coffee. Assistant: Noted: stops and legs separated (+1 week), a read replica for dashboards approved, customs data model flagged as outdated — and the coffee machine is in your hands.
M 2026-03-13 wt3 | User: Day after the notary and I'm useless. Good news though: the new coffee machine arrived (a Jura, the facilities team paid), and Lina shipped her first fix to production. Bad news: Nordhafen wants the customs export to support Norwegian declarations too, which nobody had ever mentioned. Tobias is writing it up as FW-1301 so we can argue about it properly. Assistant: Noted: Jura coffee machine installed, Lina's first production fix, and Nordhafen's new request for Norwegian customs declarations, to be written up by Tobias as FW-1301.
M 2026-04-30 wt4 | User: Sunil's first month review — he said the team is strong but I over-protect them from bad news. Fair. He wants me to let Priya present Atlas status to the steering group directly. Also he's asked each manager to name a successor for when they're on leave; I'm going to propose Priya for technical decisions and Tobias for stakeholder things. Meanwhile I'm leaving at 9:30 today for a personal errand. Assistant: Noted: Sunil's feedback (less shielding), Priya to present Atlas status to the steering group, and your proposed stand-ins: Priya for technical decisions, Tobias for stakeholders.
M 2026-05-22 wt5 | User: Femi found a nasty edge case in the customs export: shipments that split across two EU entry points get declared twice. That's probably two more days. Marek has been on call for three weeks straight because of the move shuffle and I need to fix the rota so it's not him again. And the Nordhafen pilot kicks off on 15 June whether we like it or not. Assistant: Noted: the double-declaration edge case (about two more days), fix the rota so Marek gets a break, and the Nordhafen pilot starting 15 June regardless.
M 2026-06-16 wt6 | User: Pilot day two. Maren Ost called twice, once to complain that the Bremen drivers' app shows stops in the wrong order and once to say the new dashboards are the best thing we've ever shipped. Both true. The stop-order bug is FW-1322, Priya's on it. Also IT finally replaced my laptop, so I spent the evening reinstalling everything and the Polish keyboard layout is driving me mad. Assistant: Noted: Bremen stop-order bug FW-1322 (Priya), positive feedback on the dashboards from Maren Ost, and the laptop setup woes.
M 2026-07-08 wt7 | User: The day after go-live. Honestly anticlimactic, which is exactly what you want. Monolith traffic is down to 3%, mostly Bellini's old SOAP client that refuses to die. Sunil bought the team pizza. I've told everyone no deploys until Monday except emergencies. Femi looks exhausted — I want to give him a few days off before his parental leave planning starts. Assistant: Noted: monolith traffic at 3% (mostly Bellini's SOAP client), deploy freeze until Monday, and give Femi a few days off.
M 2026-07-28 wt8 | User: Prepping the all-hands write-up. The numbers: error rate 0.08% vs 0.31% on the monolith, p95 390 ms, zero customer escalations, and the on-call pages dropped by half. Marek wants credit for the dashboards, Priya for the data model, Femi for customs — all fair. I'm going to keep the talk to ten minutes. Also, remind me to order flowers for Frau Ritter; she sorted out the bike cellar door. Assistant: Noted the all-hands numbers (0.08% vs 0.31% errors, p95 390 ms, no escalations, pages halved), credit for Marek, Priya and Femi, a ten-minute talk — and flowers for Frau Ritter for fixing the bike cellar door.
M 2026-08-04 wt9 | User: Yusuf's first week was great — he already refactored the depot picker and Hannah adores him because he actually reads her specs. We put him on FW-1217, the dispatcher dark mode, since that's finally coming off the shelf. My only worry is that he and Lina both want to own the design system and I need to split that carefully. Assistant: Noted: Yusuf's strong first week, him on FW-1217 (dispatcher dark mode), and the Yusuf/Lina design-system ownership to split carefully.
M 2026-08-28 wt10 | User: Q4 planning session tomorrow and I'm still torn between event streaming for Atlas v2 and paying down the driver app's tech debt. Sunil will push for streaming because of the Nordhafen Norway deal. Priya will push for the driver app. Femi's leave starts in mid-September so anything data-heavy waits. I'm leaning towards half and half and risking that nobody's happy. Assistant: Noted: Q4 options (Atlas v2 event streaming vs driver app tech debt), Sunil favouring streaming for the Norway deal, Priya favouring the driver app, data-heavy work after Femi's leave, and your half-and-half leaning.
M 2026-01-26 - | Marek ist diese Woche krank; die Bereitschaft übernimmt Priya, und das Kubernetes-Update wird auf Februar verschoben.
M 2026-05-05 - | Rozmowa z Markiem po polsku na korytarzu: chce w przyszłym roku przejść do zespołu Platform w Monachium, ale jeszcze nikomu nie mówił.
M 2026-06-26 - | Resumen del retro del offsite: el equipo quiere menos reuniones los jueves y un canal de Slack solo para incidentes.

Q anch wt3 | What is FW-1301?
Q anch wt6 | What is FW-1322 and who is fixing it?
Q anch wt8 | What was the error rate after go-live compared with the monolith?
Q anch wt1 | Why should I not schedule anything on the 6th of February?
Q para wt4,lt21,lg06 | Whom did I nominate to cover for me when I'm off?
Q para wt3 | What kind of espresso maker did we get at the office?
Q para wt9 | Which ticket is the newest frontend engineer working on?
Q ent wt1,femi_lagos | Where was Femi going for a family wedding?
Q near - | What is FW-1302? || stored: FW-1301 (Norwegian declarations) and FW-1322 || absent:FW-1302
Q near - | What is FW-1232? || stored: FW-1322 (Bremen stop order) and FW-1203/FW-1217 (dark mode) || absent:FW-1232
Q near - | What was the p95 latency of Atlas at 5× peak? || stored: the load test was at 3× peak (410 ms) || absent:5×
Q near - | Who won the hackathon jury prize? || stored: Lina and Femi's bot won the audience prize
Q near - | Who is the new data engineer hired in January? || stored: no fit was found; the role was frozen
Q near - | When did Marek move to the Munich Platform team? || stored: he only told me he wants to next year
""")

# ---------------------------------------------------------------- everyday chat turns, winter and spring (mostly neighbours)
CHUNKS.append(r"""
M 2025-12-02 - | User: Can you help me think through dinner this week? Diego works every evening until Saturday, so it's just me. I have half a cabbage, a lot of potatoes, some smoked tofu and the end of a jar of harissa. I don't want to cook more than twice. Also the heating in the living room makes a clicking noise at night, which is driving Pestka crazy. Assistant: Two cooks: a big tray of harissa-roasted potatoes and cabbage with the smoked tofu (lasts three days), and a potato-cabbage soup for the rest of the week. For the clicking, it may be air in the radiator — the caretaker visit should fix it.
M 2025-12-04 meetup | User: I've been asked to give a lightning talk at the Leipzig Python meetup in February. I'm tempted but I have nothing new to say apart from Atlas, which is confidential. Maybe something about on-call hygiene? Also, note to self: the bakery on Lindenweg stops doing the poppy-seed rolls after New Year, which is a tragedy. Assistant: On-call hygiene is a solid, non-confidential topic — war stories about alert fatigue always land well. Noted the poppy-seed roll tragedy.
M 2025-12-08 library | User: Diego and I had the 'do we get a Christmas tree' debate again. He says real, I say Biscuit will pee on it, Pestka will climb it. Compromise: a small potted one on the windowsill that goes on the balcony after. Separately: I keep forgetting to return the library books, they were due last Friday — 'The Overstory' and a Szymborska collection. Assistant: The potted tree sounds like a sensible compromise. Reminder: return 'The Overstory' and the Szymborska collection to the library — they're overdue.
M 2025-12-11 - | User: Work Christmas party planning is a nightmare. Tobias wants an escape room, Marek wants bowling, Hannah wants anything without alcohol being central, and I just want it to be over. We've settled on dinner at Auerbachs Keller because it's easy. Also I found a recipe for gingerbread that uses rye flour, which could be a good use for Zyta's discard. Assistant: Dinner is a safe choice. A rye gingerbread sounds like a great way to use up starter discard.
M 2025-12-18 tata_thermos | User: Just back from the team dinner. Auerbachs Keller was touristy but fun; Femi did a speech about the geocoder test that had everyone crying with laughter. I had too much Glühwein. Tomorrow I'm working from home and then heading out to buy last-minute gifts: something for Tata (he wants a proper thermos for fishing), and a book for Kasia. Assistant: Sounds like a good night. Gift list: a good fishing thermos for your dad and a book for Kasia.
M 2025-12-31 - | User: Last day of the year and I'm doing my annual review of the year like a good manager. Good: the team held together, Priya grew a lot, Biscuit stopped pulling on the lead. Bad: I worked too many evenings, and we never took a proper holiday. Next year I want two full weeks off in summer, no laptop. Assistant: A thoughtful review. Noted the intention for next year: two full weeks off in summer with no laptop.
M 2026-01-06 roscon | User: Three Kings' Day — Diego made a roscón with a hidden figurine and I got the bean, which apparently means I pay for next year's. Back to work tomorrow after the break and I'm dreading the inbox: 412 unread. Also the radiator is clicking again, I'll ring Mr. Sauer. Assistant: Ha — next year's roscón is on you, then. Good luck with the 412 emails; noted to call Mr. Sauer about the radiator.
M 2026-01-11 tiflis | User: I tried that Georgian restaurant in the Südvorstadt, Tiflis, with Hannah. The khachapuri was enormous; we shared one and still couldn't finish. Hannah's thinking about quitting to go freelance, but don't mention it to anyone. Also the cello rent went through twice this month, I need to check with Lindner. Assistant: Noted: Tiflis in the Südvorstadt was a hit. I'll keep Hannah's freelance thoughts private. Reminder: check the double cello rent charge with Geigenbau Lindner.
M 2026-01-15 cello_buyout | User: The rent-to-own cello thing: Lindner refunded the double charge, no fuss. I also asked what the cello would cost to buy outright now — about €1,150 after what I've paid so far. Tempting. Diego is making cocido tonight which means the flat will smell like chickpeas for two days. Assistant: Good that the double charge was refunded. Noted the buy-out price of about €1,150.
M 2026-01-20 - | User: Snowed in. The trams are running but the pavements are an ice rink; Biscuit refuses to walk further than the corner and then does his business right on the neighbour's doorstep. Working from home, three meetings back to back. I'm going to try Hannah's trick of walking around the block between calls. Assistant: Stay safe on the ice. The walk between calls is a good idea — even a short one helps.
M 2026-01-28 release_turn | User: 3.4.0 is out, finally, and nothing's on fire yet. Celebrated with the team at the Vietnamese place on Brühl, Bánh Mì Stable. Priya told me she's thinking about a sabbatical next year to walk the Camino. Also the city sent a letter about a water pipe repair in our street from 9 to 13 February — water may be off during the day. Assistant: Congrats on 3.4.0! Noted: Priya's possible Camino sabbatical next year, and water works on your street from 9 to 13 February.
M 2026-02-05 water2 | User: The pipe repair started early and we had no water this morning, so I showered at Kletterwerk — I mean at Blockhaus, after climbing. The 6A finally went, by the way. Diego's restaurant had a health inspection and passed, but the chef was furious about a note on the fridge temperatures. Assistant: Congratulations on the 6A! Good that the inspection passed.
M 2026-02-14 - | User: Valentine's weekend in Dresden. The hotel room has a copper bathtub which Diego finds hilarious. We walked along the Elbe to the Blue Wonder bridge and had coffee at Kunsthofpassage. Ballet tonight. I'm trying very hard not to look at Slack. Assistant: Enjoy the ballet — and the copper bathtub. Slack can wait until Monday.
M 2026-02-22 haircut_plan | User: Rainy Sunday. Baked a 20% spelt loaf that came out flat — I think Zyta's sulking because I left her in the fridge too long. Watched 'Anatomy of a Fall' with Diego, who guessed the ending wrong. Need to book a haircut at Salon Mareike before the notary, I look like a hedge. Assistant: Sorry about the flat loaf — a couple of room-temperature feeds should wake Zyta up. Reminder: book a haircut at Salon Mareike before the notary appointment.
M 2026-03-01 haircut_done | User: Haircut done at Mareike, shorter than I meant but Diego says it suits me. Tried the new brunch place on Gohliser Straße, Frühstückerei, and it was overpriced. Biscuit's loaf theft today has made him the most hated dog in the building, apparently Mr. Sauer saw it through the window. Assistant: Glad the haircut worked out. Noted: Frühstückerei was overpriced.
M 2026-03-08 - | User: International Women's Day — the Polish habit of giving flowers lives on: Tata sent Mama tulips and me a voice message. The spelt experiment finally worked: 75% hydration, long cold retard. Diego said it's the best loaf I've made, which he only says about once a year. Assistant: Lovely. Congratulations on the loaf!
M 2026-03-21 - | User: Spring is here and so is the birch pollen. I'm sneezing through all my meetings. Went to the Saturday market on Lindenauer Markt and bought wild garlic; pesto tonight. Also Diego bought a used bike to replace the stolen one, so he can finally stop borrowing mine. Assistant: Wild garlic pesto sounds great. Glad Diego has a bike again.
M 2026-03-29 - | User: Clocks went forward and I'm a zombie. Packing started in earnest: 14 boxes of books so far and we're not done with the study. Diego insists the cookbooks need their own box category. I've decided to give away the old desk — anyone in the building want it? Assistant: Good luck with the boxes. Maybe post the desk in the building's chat or on Kleinanzeigen.
M 2026-04-03 - | User: Good Friday in Valencia. Carmen has been cooking since dawn; Vicente wants to show me another Vespa. It's 24 degrees here and I'm in sandals while Leipzig has sleet. Lucía arrives tomorrow from Madrid with Noor. I've promised myself no laptop all week, which lasted until about 11 am. Assistant: Enjoy the sunshine — and try to keep the laptop closed for the rest of the week.
M 2026-04-26 - | User: Moving countdown: three weeks. The kitchen fitter comes the week after we move, so we'll live on a camping stove and takeaways for a bit. Diego is horrified. I'm choosing paint colours for the hallway, leaning towards a warm off-white. And Pestka knocked a full box of screws off the shelf at 3 am. Assistant: Three weeks — you're nearly there. A warm off-white is a safe choice for a hallway.
""")
CHUNKS.append(r"""
Q para meetup,meetup_signed | What subject was I weighing up for a brief presentation at the programming group?
Q para library | Which borrowed titles was I late handing back in winter?
Q para tata_thermos,thermos_bought | What present did I plan for my father's angling trips?
Q para tiflis | Where did my colleague and I eat cheese bread from the Caucasus?
Q para release_turn,water2 | When was the plumbing work outside our building going to cut off the taps?
Q para release_turn | Which colleague dreams of hiking to Santiago on a career break?
Q para haircut_done | Which morning-meal café did I find too expensive?
Q para roscon | Who is on the hook for the following Epiphany pastry?
Q anch haircut_plan,haircut_done | What did I book at Salon Mareike?
Q anch release_turn | Where did the team celebrate the 3.4.0 release?
Q near - | Where did the team celebrate the 3.5.0 release? || stored: only the 3.4.0 celebration at Bánh Mì Stable
Q near - | When is the Leipzig Python meetup in March? || stored: I was asked to talk at the February meetup
Q near - | What is the phone number of the Georgian restaurant Tiflis? || stored: only that we ate khachapuri there with Hannah
""")

# ---------------------------------------------------------------- everyday chat turns, late spring and summer
CHUNKS.append(r"""
M 2026-05-03 st01 | User: Saturday errands: Baumarkt for wall plugs and a stud finder, the post office to forward mail from Lindenweg for six months (€32.90), and the pharmacy for more cetirizine. Diego is at Casa Olivo until late for one of his last shifts. I'm eating cereal for dinner and regret nothing. Assistant: Noted: mail forwarding from Lindenweg set up for six months (€32.90). Enjoy the cereal.
M 2026-05-14 st02 | User: Diego's last day at Casa Olivo is the 30th and the staff are planning a surprise dinner for him — Chef Raúl asked me to get him there at 10 pm on the 29th without him suspecting. I have no idea how. Also, the movers want a parking ban zone in front of both buildings on moving day; the Ordnungsamt needs two weeks' notice, which is cutting it fine. Assistant: Noted: get Diego to Casa Olivo at 10 pm on 29 May for the surprise, and apply for parking bans at both addresses now.
M 2026-05-19 st03 | User: First night in the new flat with a bed assembled. Everything else is boxes. The shower pressure here is incredible compared to Lindenweg. We ordered pizza from Pizzeria Nonna Rosa round the corner and it was genuinely good. Biscuit has already met the dog on the ground floor, a huge Leonberger called Bruno. Assistant: Congratulations on the first proper night! Noted: Pizzeria Nonna Rosa is good, and Biscuit's new friend is Bruno, the Leonberger downstairs.
M 2026-05-30 st04 | User: The surprise for Diego worked! He walked into Casa Olivo thinking he was picking up his knives and the whole team was there. Chef Raúl gave a speech in Spanish and German and Diego cried, obviously. They gave him an engraved paella pan. I've never seen him so happy and sad at once. Assistant: That sounds wonderful — an engraved paella pan is a perfect keepsake.
M 2026-06-05 st05 | User: Kitchen day one: Rainer and his apprentice arrived at 7, the old kitchen was out by lunch. The sage green looks even better than in the showroom. They found that the wall behind the sink is crooked, so the quartz needs templating again — another week. Camping stove it is. Assistant: Exciting! Noted that the worktop needs re-templating because of the crooked wall, about another week.
M 2026-06-14 st06 | User: Kitchen done! The induction hob is scarily fast; I boiled pasta water in three minutes. Diego has already rearranged all the drawers twice. We ordered the green velvet sofa today too, which means the living room will have a theme. I think the flat finally feels like home. Assistant: Congratulations — a finished kitchen and a sofa on order. Enjoy the fast hob!
M 2026-06-19 st07 | User: Midsummer-ish. We're going to Jonas's place for a garden party on Saturday, I promised potato salad, the Polish way, with pickles and no mayonnaise overload. Also need to buy Lotte a thank-you present for all the pet sitting in Gohlis; she's starting university in Halle. Assistant: Noted: Polish potato salad for Jonas's garden party on Saturday, and a thank-you gift for Lotte, who's starting university in Halle.
M 2026-06-22 st08 | User: Lotte's present sorted: a voucher for a Halle bookshop and a framed photo of Biscuit, which she apparently cried at. Jonas's party was good; Marta asked if we'd be witnesses at their wedding next year! We said yes before thinking. Assistant: Lovely. Noted: you and Diego have agreed to be witnesses at Jonas and Marta's wedding next year.
M 2026-07-03 st09 | User: The recital is tomorrow and my hands are already shaking. Jakob says to breathe out on the long notes. Diego has promised to film but not to post anything. After that I never want to see the Breval sonata again. Also it's 34 degrees and the flat is a sauna, we need a fan or two. Assistant: You'll be fine — breathe out on the long notes. Noted: buy a fan or two for the heat.
M 2026-07-06 st10 | User: Bought two fans at MediaMarkt (€49 each). The bedroom is bearable now. Weekend plan is the lake: Cospudener See with a picnic if Biscuit behaves. Sunday dinner at the Okafors', Grace is making egusi soup and I'm bringing dessert — maybe a sernik from Aunt Basia's recipe? Assistant: A sernik sounds perfect for the Okafors' dinner.
M 2026-07-11 st11 | User: The sernik was a disaster — it cracked right down the middle — but Grace said it tasted like her aunt's cheesecake in Lagos, which I choose to take as a compliment. Their son Chidi is studying engineering in Dresden and wants an internship; maybe Fernwell? I'll ask Marek. Assistant: A cracked cheesecake still counts. Noted: Chidi Okafor (engineering student in Dresden) is looking for an internship — ask Marek about Fernwell.
M 2026-07-14 st12 | User: Marek says Fernwell's internship applications for winter open in September and he's happy to refer Chidi. Passed that on. Meanwhile Biscuit has an ear infection again, and the heat makes everything worse. Diego is doing a pilot of his Valencian week for the Porsche canteen on Friday. Assistant: Good news for Chidi. Noted: winter internship applications open in September with Marek referring him, and Diego's Valencian week pilot on Friday.
M 2026-07-19 st13 | User: Hiked in the Dübener Heide with Hannah and Leo — 18 km, loads of blueberries, one very tired beagle. Leo's van broke down on the way back so we waited two hours for the ADAC. Also I think something bit me, there's a red spot on my leg. Assistant: Sounds like an adventure. Keep an eye on that spot — if it's a tick bite, watch for a ring-shaped rash.
M 2026-07-24 st14 | User: Diego's Valencian week pilot was a hit: 420 portions of paella in one lunch service at the Porsche canteen, and the client wants it quarterly. He came home smelling of saffron and completely wired. Meanwhile I have to prep for the all-hands next week. Assistant: Congratulations to Diego — 420 portions is impressive. Good luck with the all-hands prep.
M 2026-08-01 st15 | User: Yusuf started today. Diego and I packed for the Algarve: sunscreen, two books each, the Fujifilm, and Biscuit's stuff for Jana. The flight is from Berlin, so we'll take the ICE to BER on the morning of the 8th. Assistant: Noted: ICE to BER on the morning of 8 August. Have a wonderful trip!
M 2026-08-12 st16 | User: Algarve day five. We drove to Sagres for the sunset at Cabo de São Vicente, ate grilled sardines in Carrapateira, and I got properly sunburnt on my shoulders despite everything. Diego bought a cataplana pot in Aljezur that will not fit in our luggage. Assistant: Sounds magical (apart from the sunburn). You may need to ship that cataplana home.
M 2026-08-18 st17 | User: Home. Unpacked, six loads of laundry, Biscuit is back and pretending he missed us. The cataplana came home in Diego's hand luggage after a debate at security. I started the Clara Usón novel for book club on the plane. Tomorrow I go back to work and I already have 230 unread emails. Assistant: Welcome back! Good luck with the 230 emails.
M 2026-08-22 st18 | User: Diego's dinner for his colleagues is tonight, eight people. I'm in charge of drinks and chairs: borrowed four folding chairs from Mr. Okafor. Menu: arroz negro, padrón peppers, a big salad, and Carmen's flan recipe. Assistant: Sounds like a feast. Noted: four folding chairs borrowed from Mr. Okafor, to return.
M 2026-08-30 st19 | User: End of summer. Returned the chairs to the Okafors with a bottle of wine. The sofa is still not here. I'm booking Christmas flights to Kraków this week. And Jonas starts his new job at the Gewandhaus on Monday; we're going to a concert there in October with staff tickets. Assistant: Noted: Christmas flights to Kraków to book this week, and a Gewandhaus concert in October with Jonas's staff tickets.
M 2026-06-01 st20 | User: Walked Biscuit along the Karl-Heine-Kanal this morning, and there's a café on a boat near the Könneritzbrücke that does excellent cortados. Diego's first day at Feldküche went fine; he's in charge of a team of six. I finally found the box with the cutlery. Assistant: Noted: the boat café near the Könneritzbrücke does great cortados. Glad Diego's first day went well.
M 2026-06-09 st21 | User: Lyon tomorrow. Slides done, clicker packed, three rehearsals with Hannah as the audience. Camille is picking me up from the airport and insists I stay for dinner with Thomas and Inès before the hotel. Diego is on pet duty, which means Biscuit will be fed twice. Assistant: Good luck with the talk! Enjoy dinner with Camille's family.
M 2026-06-28 st22 | User: Rainy Sunday, so Diego and I finally hung the pictures in the hallway and assembled the bookshelf Leo will have to fix later, probably. I gave Mr. Okafor some of Zyta. Made a pot of żurek with the sourdough starter and the whole floor smelled of it. Assistant: A productive rainy day! Noted that Mr. Okafor now has some of Zyta.
M 2026-07-27 st23 | User: Tomek's birthday call: he loved the Komeda vinyl and played it down the phone. He's been promoted to chief engineer on the next ferry build, which means more sea trials. Zosia wanted to show me her wobbly tooth, again. Kasia says hi. Assistant: Congratulations to Tomek on the promotion to chief engineer!
M 2026-07-30 st24 | User: All-hands went well. The numbers slide got a round of applause, which has never happened at Fernwell. Sunil said 'told you so' to the board. Priya's got a new project codename from him: Boreas, for the Norway work. I'll believe it when it has a budget. Assistant: Congratulations on the all-hands! Noted: the Norway work is codenamed Boreas.
M 2026-08-25 st25 | User: Tough one today: Femi's leave means I have to reshuffle the data pipeline ownership. Lina is keen but green. Marek has agreed to be backup again, though I promised him no more than two on-call weeks in a row. Also the sofa company emailed about the delay, again. Assistant: Noted: Lina takes the data pipeline during Femi's leave with Marek as backup, and your promise of no more than two consecutive on-call weeks for Marek.
M 2026-04-19 st26 | User: 10K done! Legs like jelly, but no shin pain at all. Diego and Biscuit were at kilometre 7 with a sign that said 'Run, Ola, run' in three languages. Afterwards we had a huge brunch at Café Grundmann. Next year I might try the half again. Assistant: Congratulations! A great comeback — maybe the half next year.
M 2026-05-11 st27 | User: Eurovision watch party at Hannah's on Saturday; I'm supposed to bring a Polish snack. Paluszki and a kabanos plate should do it. Also the ID.3 needed its first proper charge at a DC station and it took 31 minutes from 15 to 80%. Assistant: Paluszki and kabanos sound perfect. Noted the first DC charge: 31 minutes from 15% to 80%.
""")
CHUNKS.append(r"""
Q para st01 | How long will letters be redirected from the previous address, and for what fee?
Q para st03 | What breed is the large canine living below us?
Q para st04 | What did the kitchen crew present to my partner on his leaving night?
Q para st27 | How long was the initial rapid top-up of our EV?
Q para st20 | Where is the floating coffee spot I discovered while out with the beagle?
Q anch st14 | What happened with the 420 portions of paella?
Q anch st24 | What is Boreas?
Q ent st03 | Who is Bruno?
Q ent st11,st12,chidi_int | Who is Chidi?
Q ent st08,jm_wedding | Whose wedding will Diego and I be witnesses at?
Q near - | What is the name of the Leonberger on the third floor? || stored: Bruno the Leonberger lives on the ground floor
Q near - | What does Chidi study in Leipzig? || stored: he studies engineering in Dresden
Q near - | What is project Zephyr? || stored: the Norway work is codenamed Boreas || absent:Zephyr
""")

# ---------------------------------------------------------------- short notes: calendar, errands, preferences (mostly neighbours)
CHUNKS.append(r"""
M 2025-12-01 coffee | Coffee order: oat flat white, no sugar; Diego drinks cortado.
M 2025-12-02 - | Reminder: Advent calendar for Zosia and Kuba posted to Gdańsk by 25 November — done, cost €18 to ship.
M 2025-12-05 - | Christmas market with Hannah on 10 December after work, meet at the Naschmarkt at 18:00.
M 2025-12-19 thermos_bought | Bought a fishing thermos (Stanley Classic 1 l) for Tata, €42.
M 2025-12-09 - | Kasia's present: "Księgi Jakubowe" by Olga Tokarczuk, hardback, ordered from a Polish bookshop in Berlin.
M 2025-12-11 - | Diego's work schedule over the holidays: off 22–28 December, back on the 29th for the New Year's Eve menu.
M 2025-12-14 - | Pestka's litter: switched to the clumping tofu litter from Fressnapf, 6 l bag lasts about three weeks.
M 2025-12-16 - | Library card number for the Stadtbibliothek renewed until December 2026; the Gohlis branch closes at 18:00.
M 2025-12-20 santa | Secret Santa at work: I drew Marek; budget €20. Got him a Polish hot sauce sampler.
M 2025-12-22 - | Packed for Kraków: gifts, Biscuit's food for Lotte, Diego's turrón, and the cello stays at home.
M 2025-12-26 - | Boxing Day walk along the Vistula with Tata and Diego; Tata explained the whole history of the Wawel dragon, again.
M 2025-12-29 lotte_xmas | Back in Leipzig. Lotte says Biscuit was perfect and Pestka ignored her the whole week.
M 2026-01-03 - | January goal list: 1) cello four times a week, 2) finish the Atlas RFC, 3) sort the tax documents by the 31st.
M 2026-01-05 shoes | Gym bag essentials for bouldering: chalk bag, shoes (La Sportiva Tarantulace, size 38.5), brush, tape.
M 2026-01-07 - | Grocery staples to reorder: oat milk, rye flour, smoked paprika, saffron for Diego, cat food (renal? not yet).
M 2026-01-10 - | Movie night: watched "Perfect Days"; Diego fell asleep, I loved it.
M 2026-01-12 - | Tax documents collected in the blue folder: payslips, Riester statement, receipts for the home office desk and glasses.
M 2026-01-16 hannah_bday | Hannah's birthday is 3 March (noted for later).
M 2026-01-18 - | Podcast recommendation from Tobias: "Soft Skills Engineering"; Priya recommends "Kubernetes Podcast from Google".
M 2026-01-21 - | Car: the Skoda's TÜV is due in May 2026; Merkel can do it with the next service.
M 2026-01-23 - | Made bigos for the first time in Leipzig; needs more prunes next time.
M 2026-01-25 - | The flat viewing at Kastanienallee: Paco said the windows are from 2012 and fine; the roof was redone in 2019.
M 2026-01-27 - | Zosia sent a drawing of Biscuit with six legs; stuck it on the fridge.
M 2026-01-29 - | Reading: finished "Lessons in Chemistry"; next up is "Empuzjon" by Tokarczuk.
M 2026-01-31 alvaro_call | Álvaro's birthday video call: he's 30 and now runs a record shop in Russafa.
M 2026-02-01 - | Deutschlandticket: mine renewed automatically for February; €58.
M 2026-02-04 - | Sent Kasia the Christmas photos, finally (shared album "Wigilia 2025").
M 2026-02-06 meetup_signed | Signed up for the Leipzig Python meetup lightning talk on 25 February: "On-call without tears".
M 2026-02-09 inc_notes | Marek's notes from INC-0412 review: next time page the platform team after 15 minutes, not 45.
M 2026-02-11 purifier | Bought a HEPA air purifier (Philips Series 2000) for the bedroom before pollen season, €179.
M 2026-02-13 - | Pancake day plans: Diego is making crêpes with dulce de leche; I'm making racuchy.
M 2026-02-15 - | Pestka's estimated birthday: tuna dinner and a new feather toy. She ignored the toy.
M 2026-02-18 - | Dentist reminder card arrived: next check-up in six months, around July.
M 2026-02-20 - | Priya's conference in Amsterdam went well; she's giving a version of the talk internally on 5 March.
M 2026-02-25 - | The meetup talk went fine; 40 people, someone asked for the slides on GitHub.
M 2026-02-27 femi_lagos | Femi's wedding trip to Lagos: back on 10 February, brought chin chin for the team.
M 2026-03-03 hannah_lunch | Hannah's birthday lunch at Kaiserbad; she's decided to stay at Fernwell after all.
M 2026-03-06 - | Tobias is organising a team climbing session on 20 March at Blockhaus; 7 people signed up.
M 2026-03-10 - | Mortgage: first instalment due 30 April; standing order set up from the joint account.
M 2026-03-15 - | Back from Kraków; the train was 25 minutes late at Wrocław.
M 2026-03-19 - | Roadmap review with Tobias moved to 19 March; went fine, dark mode moved to Q4.
M 2026-03-22 - | Spring cleaning list for the old flat before handover: oven, windows, fill the dowel holes, repaint the hallway?
M 2026-03-25 - | Praline tart attempt one: too sweet, the crust soggy; Camille says use less cream.
M 2026-03-27 - | Ordered moving boxes: 60 from Umzugskartons24, €96, delivery in three days.
M 2026-04-01 aprilfool | April fool from Diego: claimed he'd adopted a second beagle. I believed him for a minute.
M 2026-04-06 - | Easter Monday at the beach in El Perelló; water too cold for anyone except Vicente.
M 2026-04-10 - | Forwarded the Lofoten cancellation refund emails to Diego to track the flight vouchers.
M 2026-04-16 - | Priya presented Atlas status to the steering group herself for the first time; she nailed it.
M 2026-04-20 physio1 | Physio first session: shoulder blade doesn't move properly; homework is band rows and wall slides.
M 2026-04-22 - | Work from home on Fridays until the move so I can pack during lunch.
M 2026-04-24 - | Called the Bürgeramt line: earliest slot for re-registration is 3 June, took it.
M 2026-04-27 lyon_outline | Lyon talk outline: 1) why no freeze, 2) outbox pattern, 3) dual writes, 4) cut-over, 5) what went wrong.
M 2026-05-01 - | May Day: walked to the Auensee with Biscuit; Diego worked a double shift.
M 2026-05-06 - | Skoda's TÜV no longer needed since the car is sold; cancelled the slot at Merkel.
M 2026-05-08 anto | Diego's farewell card for Casa Olivo: everyone signed, including the dishwasher Anto.
M 2026-05-12 - | Packing tip from Hannah: label boxes by room and number them; keep a list on the phone.
M 2026-05-15 meter_final | Final meter reading at Lindenweg to send to Stadtwerke: electricity 31,870 kWh.
M 2026-05-17 boxes72 | Day after the move: 72 boxes, one broken mirror, and we can't find the kettle.
M 2026-05-21 - | Kettle found in the box labelled "bathroom".
M 2026-05-24 - | Hung the blackout curtains in the bedroom; the west light is intense in the evening.
M 2026-05-27 - | Ordered a doormat that says "Hola / Cześć / Hallo" for the new flat; Diego approves.
M 2026-05-29 - | Lindenweg handover prep: hallway repaint done by Diego and Leo? No — Leo helped only with the ceiling.
M 2026-06-02 - | Bought a second Feliway refill; Pestka still hides when the doorbell rings.
M 2026-06-04 - | Kletterwerk Süd has a rooftop bouldering area; open until 23:00 in summer.
M 2026-06-08 - | Reading: "Chłopki" by Joanna Kuciak — brilliant; recommending it to Mama.
M 2026-06-10 - | Lyon: hotel check-in done; Camille picks me up at 19:00.
M 2026-06-17 - | Fernwell's summer party on 2 July at the Westwerk; partners invited, Diego can come.
M 2026-06-20 - | Diego's B2 exam venue: Volkshochschule Leipzig, Löhrstraße, 09:00.
M 2026-06-23 - | New dishwasher tabs in the kitchen drawer next to the sink; the old ones were for hard water.
M 2026-06-27 - | Ines's barbecue: lovely garden in Leutzsch, her kids taught Diego to play Mölkky.
M 2026-07-02 - | Fernwell summer party moved to 10 July because of the heat warning.
M 2026-07-04 - | Recital day: wore the black linen dress, the one from Camille.
M 2026-07-08 - | Bought a mosquito net for the bedroom window; the canal brings them in.
M 2026-07-10 - | Summer party at the Westwerk; Diego won the karaoke with "Bailando".
M 2026-07-15 - | Chidi's CV forwarded to Marek for the internship.
M 2026-07-19 - | ADAC membership renewed: Plus tariff, €94 a year, covers both of us.
M 2026-07-21 - | Pestka weighs 4.6 kg at home on the bathroom scale (me with and without cat).
M 2026-07-26 - | Gift wrap and cards stock: bought a box of 20 birthday cards from Papeterie Lindner.
M 2026-08-02 - | Algarve packing list: sunscreen 50, hats, snorkel, the Fujifilm, two novels, adapter not needed.
M 2026-08-04 - | Jana came to meet Biscuit before the trip; he rolled over immediately.
M 2026-08-08 - | ICE to BER left on time; flight to Faro at 13:40.
M 2026-08-10 - | Praia da Amoreira: river meets the ocean; Diego swam, I read.
M 2026-08-13 - | Odeceixe kayak trip: €25 each, two hours upriver.
M 2026-08-15 - | Ate cataplana at O Sítio do Rio near Carrapateira; Diego asked for the recipe in Spanish-Portuguese.
M 2026-08-20 - | Back at work: 230 emails down to 40 by lunch.
M 2026-08-22 - | Okafors' folding chairs: four, grey, to return by Sunday.
M 2026-08-27 - | Christmas flights to Kraków compared: train is €79 each way with the BahnCard; flights via Munich €260.
M 2026-08-31 xmas_train | Booked the train to Kraków for Christmas: 21 December out, 28 December back, €158 each return.
M 2026-02-28 - | Hausarzt-Quittung für die Physio-Verordnung aufbewahren; Zuzahlung 10 € plus 10 % pro Behandlung.
M 2026-05-02 - | Lista rzeczy do spakowania w kuchni: najpierw przyprawy, potem garnki, na końcu kawa i czajnik.
M 2026-06-15 - | Lista de la compra para la cena de aniversario: no, mejor reservar fuera; Diego no quiere cocinar ese día.
M 2026-07-29 - | Idée pour l'anniversaire de Camille : un coffret de thés de Leipzig et une photo encadrée de Lyon en 2009.
M 2026-03-18 kitchen_de | Notizen zur Küche: Steckdosen über der Arbeitsplatte an drei Stellen, Licht unter den Hängeschränken.
M 2026-08-19 - | Pomysł na prezent dla mamy na święta: ciepły szal z alpaki i książka „Chłopki”.

Q anch hannah_bday,money_turn,hannah_lunch,fern,lg02 | Whose birthday is on 3 March?
Q para shoes | What do I need to pack for a session on the climbing wall?
Q para coffee | What do I usually ask for at the café?
Q anch santa | Who did I draw for Secret Santa?
Q anch meter_final | Which meter reading was 31,870 kWh?
Q para boxes72 | How many cartons did we end up with after relocating, and what got smashed?
Q anch xmas_train | What is booked for 21 December?
Q ent anto | Who is Anto?
Q ent alvaro,alvaro_call,work_turn1 | Who is Álvaro?
Q para aprilfool | What prank did my partner play on me in spring?
Q near - | What was the final gas meter reading at Lindenweg? || stored: only electricity readings (31,870 kWh at Lindenweg, 48,213 kWh at Kastanienallee) || absent:gas meter
Q near - | What record shop does Álvaro run in Madrid? || stored: his record shop is in Russafa, Valencia
""")

# ---------------------------------------------------------------- more long chat turns (neighbours, a few targets)
CHUNKS.append(r"""
M 2025-12-06 lt01 | User: Saturday. Diego's at work so I took Biscuit to the Rosental and then did the big shop at the Polish deli in Eutritzsch, Smaki Polski — twaróg, kiszona kapusta, krówki, two jars of ćwikła. The owner, Pani Grażyna, remembered me and threw in a packet of poppy seeds for Christmas baking. Tonight: cello practice and then something trashy on TV. Assistant: Sounds like a good Saturday. Noted: Smaki Polski in Eutritzsch (Pani Grażyna) is your Polish deli.
M 2025-12-10 lt02 | User: The Christmas market with Hannah was freezing but fun. She had three Glühweins and confessed she's thinking of going freelance in the summer. I had a Handbrot, which is now my favourite food on earth. Also, work: Tobias has asked me to write the Q1 OKRs by Friday, which is the opposite of fun. Assistant: Noted: Hannah's freelance thoughts (private), your new love for Handbrot, and the Q1 OKRs due Friday for Tobias.
M 2025-12-13 lt03 | User: I had a weird dream that Pestka could talk and she was very rude. Anyway. The landlord finally had the bathroom radiator bled and now it actually heats. I'm going to spend the afternoon wrapping presents and watching the ski jumping, which is a Polish family tradition that Diego finds baffling. Assistant: A rude talking cat sounds about right. Glad the radiator works now. Enjoy the ski jumping!
M 2025-12-17 lt04 | User: Team dinner is tomorrow. I need to say something at the start and I'm thinking of thanking everyone for 3.3 and the autumn incident season, then a joke about the geocoder test. Marek has asked to leave early to catch a train to Szczecin for his family Christmas. Fine by me. Also I still haven't bought Diego's present. Assistant: A short thank-you plus the geocoder joke sounds right. Noted: Marek leaves early for his train to Szczecin, and you still need Diego's Christmas present.
M 2025-12-21 lt05 | User: Diego's Christmas present: I got him a cooking course at a sushi place in Berlin for two people, in February, so I get to come too. Also packed Biscuit's bag for Lotte: food, his blanket, the squeaky hedgehog he can't sleep without. We leave at dawn tomorrow. Assistant: A sushi course for two is a great idea. Safe travels tomorrow!
M 2026-01-04 lt06 | User: Back from the holidays and the flat is freezing because Herr Böttcher's heating schedule assumed nobody was home. Diego is cooking lentil soup to warm us up. I have to prepare a one-pager on Atlas risks by Wednesday and I'm tempted to just write 'everything' in bold. Assistant: A lentil soup sounds perfect. For the risk one-pager: group by schedule, data migration, customer pilot and people, each with an owner and a mitigation.
M 2026-01-09 lt07 | User: Priya wants to switch the Atlas API to gRPC internally and keep REST only at the edge. Marek is worried about debugging in production. I think we should decide by the end of January so nobody builds on sand. Separately, Diego has the flu, so I'm on soup and tissues duty this weekend. Assistant: Noted: decide the Atlas internal gRPC question by end of January (Priya for, Marek worried about debugging). Get well soon to Diego.
M 2026-01-31 lt08 | User: Decision made on gRPC: internal services use gRPC, the public API stays REST, and Marek gets a week to set up proper tracing first. Everyone grumbled equally, so it's probably right. Tonight Álvaro's birthday call, then sleep. Assistant: Noted the gRPC decision (internal gRPC, public REST, a tracing week for Marek first).
M 2026-02-08 lt09 | User: Sushi course in Berlin was brilliant. The chef, Kenji, made Diego redo his nigiri four times and Diego loved every second. We stayed at a small hotel in Kreuzberg and had breakfast at a Turkish place on Oranienstraße. Back to Leipzig tomorrow morning and straight into the mortgage paperwork. Assistant: Sounds like a great weekend! Good luck with the mortgage paperwork.
M 2026-02-21 lt10 | User: Quiet weekend. Finished 'Empuzjon' and I'm not sure what I think; Tokarczuk makes me feel clever and stupid at the same time. Diego's making croquetas for a friend's birthday. Biscuit got into a fight with a poodle in the park — no injuries, just pride. Assistant: Empuzjon does that to people. Glad Biscuit's only pride was hurt.
M 2026-03-04 lt11 | User: Tough 1:1 with Renate, one of the last ones. She told me I should apply for the Head of Engineering role in Munich someday, which was flattering and terrifying. I said not while we're buying a flat. Tonight I'm making the ruskie pierogi with Diego, he's in charge of the crimping now. Assistant: That's a great compliment from Renate. Noted: Munich Head of Engineering is a 'someday', not now.
M 2026-03-09 lt12 | User: Eye test today — my eyes got worse, which explains the headaches at the end of the day. Picked tortoiseshell frames that Diego says make me look like an architect. I also finally booked the Hamburg trip for Nordhafen. The kitchen studio sent three designs and they're all beautiful. Assistant: Noted the new glasses and the Hamburg booking. Enjoy picking the kitchen design!
M 2026-03-26 lt13 | User: Lucía called Diego to ask whether we'd mind if she and Noor joined for Easter; obviously not. Carmen is over the moon. I've been practising my Spanish with Duolingo so I can keep up at dinner, but Valencian is another matter. Also the new glasses are on my face and everything is sharp. Assistant: Lovely — a full house for Easter. Good luck with the Spanish (and the Valencian).
M 2026-04-13 lt14 | User: Back at work after Easter and the Lofoten cancellation still stings. Sunil has been great though — he set up a weekly Atlas sync with me, Priya and Tobias. Also I booked the physio, finally. Tata is home from hospital and walking with crutches. Assistant: Sorry about Lofoten. Good to hear about Tata and the new weekly Atlas sync.
M 2026-04-21 lt15 | User: The Lyon talk is confirmed! I'm both excited and already rehearsing in the shower. Diego wants to come but can't take time off. Camille has offered her sofa but I'll take the hotel since I need sleep. The kitchen measurement went fine; Rainer says the wall is not straight, which is apparently a Leipzig tradition. Assistant: Congratulations on the acceptance! Noted that Rainer flagged the crooked wall.
M 2026-05-07 lt16 | User: Interviewed Clara Weiß today — very strong on accessibility, weaker on system design. Yusuf two days ago was the opposite. I think Yusuf is the better fit for what we need now but I want Hannah's opinion. Also I sold the old desk to a student for €40, one less thing to move. Assistant: Noted the interview comparison (Clara: accessibility, Yusuf: system design), Hannah's opinion to get, and the old desk sold for €40.
M 2026-05-25 lt17 | User: Moving admin never ends. The GlasLink technician comes on the 28th between 8 and 12 to install the fibre. I need to cancel the parking ban sign rental, and figure out why the post forwarding hasn't started. Diego's last week at Casa Olivo has him working doubles. Assistant: Noted: fibre installation on 28 May (8–12), cancel the parking-ban sign rental, and chase the post forwarding.
M 2026-06-09 lt18 | User: Anniversary dinner at Stadtpfeifer: six years, seven courses, one small cry from me at dessert. Diego gave me a vintage silver ring from a shop in Valencia, which he's apparently been hiding since Easter. I gave him the Japanese cookbook he wanted. Lyon tomorrow. Assistant: Happy anniversary! A ring hidden since Easter — that's dedication. Good luck in Lyon.
M 2026-07-01 lt19 | User: July already. Zosia's birthday tomorrow, the horse stable should arrive today in Gdańsk. Tata's rehab going well. Work is wall-to-wall Atlas cut-over preparation; we do the final rehearsal on the 3rd. I want the weekend to be completely offline. Assistant: Noted: Atlas final rehearsal on the 3rd and an offline weekend.
M 2026-07-22 lt20 | User: Tick check at Dr. Amann's — just a bite, nothing yet, but I have to watch it. Also Sunil asked if I'd mentor a new manager in the Munich office, Aylin Kaya, who used to report to Renate. I said yes, monthly calls. Diego's colleague Ines invited us to her daughter's christening in September. Assistant: Noted: mentoring Aylin Kaya in Munich (monthly calls), and Ines's daughter's christening in September.
M 2026-08-06 lt21 | User: Before the holiday: handed over to Priya for Atlas decisions and Tobias for everything with customers. Yusuf has his laptop and a buddy (Lina). Out-of-office is set. Biscuit goes to Jana on the 7th. I'm so ready for two weeks without Slack. Assistant: Everything's in place. Enjoy your two weeks offline!
M 2026-08-21 lt22 | User: First days back. Aylin from Munich had her first mentoring call with me; she's struggling with a team that doesn't trust her after a reorg. I suggested one-to-ones with everyone in the first month and no big changes. Also my sunburn is peeling spectacularly. Assistant: Good advice for Aylin. Noted your first mentoring session.
M 2026-02-02 lt23 | User: Groundhog day at work: the Bellini root-cause document, the mortgage documents, and Tobias's roadmap. I drank four coffees and now I'm vibrating. Tomek is back from sea trials on the 8th and wants a video call with the kids on Sunday. Diego's off tomorrow, so at least dinner is sorted. Assistant: Noted: a video call with Tomek and the kids on Sunday. Maybe no fifth coffee.
M 2026-02-27 lt24 | User: Magda's wedding invitation arrived today, a beautiful letterpress card. Diego is excited because he's never been to a Polish wedding and has heard about the vodka. I've warned him about the oczepiny games. Also found out Babcia might come if someone drives her from Nowy Targ. Assistant: A Polish wedding will be quite the experience for Diego. Noted: Babcia might come if someone drives her.
M 2026-03-06 lt25 | User: Sent the RSVP for Magda. I have to figure out a wedding present; Polish weddings mostly mean an envelope, but Mama says Magda wants a KitchenAid, so maybe a group gift with Tomek. Work: Lina started this week and she's sharp. Hannah brought cake for her first day. Assistant: Noted: possible group gift (KitchenAid) for Magda with Tomek.
M 2026-05-20 lt26 | User: Three days in. I went to the Bürgeramt website and the next slot is in June, which is ridiculous but fine. Diego found a Spanish grocery in Plagwitz, La Despensa, that has proper bomba rice. Biscuit has already figured out where the butcher is. Assistant: Noted: La Despensa in Plagwitz has bomba rice.
M 2026-06-30 lt27 | User: Atlas launch day got moved again, to 7 July, so at least I'm not launching on my brother's... no wait, that's the 29th. Anyway. The team is tired. I'm ordering them lunch from the Vietnamese place every day this week. Assistant: Noted: daily team lunches this week. Hang in there.
M 2026-08-14 lt28 | User: In the Algarve I keep thinking about work, which is stupid. Diego says I talk about Atlas in my sleep. We went to the market in Lagos today and bought piri-piri oil and a ceramic jug. Tomorrow is a beach day whatever happens. Assistant: Let Atlas go for a week — the team has it. Enjoy the beach tomorrow.
M 2026-04-27 lt29 | User: Big week: vitamin D follow-up today (still low, dose goes up), keys on Thursday, and Sunil's Atlas review on Friday. Diego is doing the move-out cleaning plan on a spreadsheet, colour-coded, because of course he is. I bought a label maker. Assistant: Busy week! Noted Diego's colour-coded cleaning plan and your new label maker.
M 2026-01-17 lt30 | User: Signed up for the half marathon — the organisers call it the Leipzig Marathon weekend and there's also a 10K and a relay. I've got 13 weeks. Hannah says she'll run the 10K. Tomorrow I'm testing a new route along the Elster flood basin, about 12 km. Assistant: Exciting! Noted: Hannah plans to run the 10K, and your 12 km test route along the Elster flood basin.
""")
CHUNKS.append(r"""
Q temp lt08 | What did we decide about gRPC at the end of January?
Q temp lt07 | What was the open question about gRPC in early January, and who was on which side?
Q ent lt09 | Who is Kenji?
Q ent lt01 | Who is Pani Grażyna?
Q ent lt20,lt22 | Who is Aylin Kaya?
Q para lt01 | Which store stocks the groceries from my home country?
Q para lt05 | What gift did I give my boyfriend for the holidays?
Q para lt26 | Where can my partner buy short-grain for paella?
Q anch lt16 | What did I sell for €40?
Q near - | What did Kenji teach us in Munich? || stored: the sushi course with Kenji was in Berlin
Q near - | When is the christening of Ines's son? || stored: Ines's daughter's christening in September; no son mentioned
""")

# ---------------------------------------------------------------- more long chat turns: rambling messages touching several topics
CHUNKS.append(r"""
M 2025-12-12 ru01 | User: ok so random list because my head is full: the boiler guy is coming to Lindenweg on Monday (Mr. Sauer is letting him in), I promised Femi feedback on his promotion case by the 19th, the Polish Christmas cards still aren't written, and Diego wants to try making his own turrón this year, which will end in burnt almonds. Oh, and I want to learn to make uszka properly. Assistant: Got it: boiler visit Monday (Mr. Sauer lets him in), Femi's promotion feedback by 19 December, Polish Christmas cards to write, Diego's turrón experiment, and uszka lessons to find.
M 2026-01-14 ru02 | User: Femi's promotion case went through to the committee, fingers crossed. The uszka experiment: Mama talked me through it on video, they came out like little hats, too much dough. Diego ate twenty anyway. Tomorrow I'm at the dentist — no wait, that moved. Tomorrow I'm just at work. Assistant: Fingers crossed for Femi. Uszka take practice — thinner dough next time.
M 2026-02-10 ru03 | User: Femi got promoted to Data Engineer II! We celebrated with cake. Also the outage postmortem is tomorrow and I want it blameless, Marek is already beating himself up. Diego's cousin Álvaro sent a playlist for the flat hunt, mostly 80s Spanish pop. Assistant: Congratulations to Femi! Noted: keep tomorrow's postmortem blameless.
M 2026-03-02 ru04 | User: Monday chaos: Lina's first day, I forgot her welcome pack at home, the notary appointment letter arrived, and Biscuit got sprayed by a cat near the canal. We also need to choose the kitchen fronts by the 20th. I miss the days when my biggest problem was bus times. Assistant: Noted: kitchen fronts to choose by 20 March. Welcome pack for Lina tomorrow!
M 2026-03-17 ru05 | User: Short update. Changed the race to 10K, shin still twinges. The bank said the land registry is slow this year, so the entry might take until May. Sunil had an intro call with me before he starts — he seems direct, which I like. Kasia is doing an inventory weekend at the pharmacy and Tomek is solo with the kids. Assistant: Noted the 10K switch, the land registry delay, Sunil's intro call, and Tomek's solo weekend.
M 2026-04-04 ru06 | User: Holy Saturday: I helped Carmen make the mona de Pascua with the hard-boiled eggs on top, Lucía and Noor arrived with a huge bag of Madrid churros, and Vicente and Paco took the Vespas out for a ride around Benimaclet. I'm sunburnt already. I checked work email once, only once. Assistant: Sounds like a lovely day. One email check is acceptable!
M 2026-04-28 ru07 | User: Packing update: the study is done, the kitchen will be last, and we've got 41 boxes labelled. The kitchen studio wants the final sign-off on the worktop colour this week. Yusuf and Clara interviews next week. Hannah lent me a drill because ours is somewhere in box 17. Assistant: Noted: worktop colour sign-off this week, Yusuf and Clara interviews next week, and Hannah's drill on loan.
M 2026-05-13 ru08 | User: Blood donation day, a cycling commute, and a furious email from Giorgio Sala about a pricing mistake on the April invoice — not my team's fault but I'm the one he knows. Forwarded to finance. Also Pestka's dental quote came back very high. Assistant: Noted: Giorgio Sala's pricing complaint about the April invoice, forwarded to finance.
M 2026-06-03 ru09 | User: Bürgeramt done, a quick 12 minutes. Then Diego's first week at Feldküche is going well, except that he has to wear a hairnet he finds undignified. The kitchen fitters start on the 5th. The new flat's bin room has a family of hedgehogs. Assistant: Glad the Bürgeramt was quick. Noted: kitchen fitters from 5 June — and hedgehogs in the bin room!
M 2026-07-18 ru10 | User: Long day. Atlas dashboards for Nordhafen are ready a week early (thanks, Marek). Sunil wants to present them at the Hamburg customer day in September. Diego's doing a trial run of the arroz negro for his colleague dinner, so the kitchen looks like a crime scene. And I'll book the Algarve rental car tomorrow, promise. Assistant: Noted: Nordhafen dashboards done early, Sunil presenting at the Hamburg customer day in September, and the Algarve rental to book tomorrow.
M 2026-08-26 ru11 | User: Admin day. Paid the Hundesteuer reminder — they'd sent it to Lindenweg — and updated the address with the city. Renewed the ADAC? No, that was July. Sent Frau Ritter flowers for the bike cellar door. Diego's supper club is now 'maybe in November'. Camille's flights are booked for my Lyon trip, wait, no — mine are. I need sleep. Assistant: Noted: dog-tax reminder paid and address updated with the city, flowers to Frau Ritter sent, supper club maybe in November. Sleep sounds wise.
M 2026-01-21 ru12 | User: Dentist done — one filling, which I'll do in February. The mortgage adviser wants us to decide between 10 and 15 years fixed by Friday; 10 is cheaper now, 15 is safer. Diego says flip a coin. Also Hannah sent me a meme about Atlas that I can never show Renate. Assistant: Noted: choose 10 or 15 years fixed by Friday, and the filling in February.
M 2026-02-28 ru13 | User: Packing list for Hamburg next week: laptop, charger, the Atlas pilot deck, the good coat. I also need to find a gift for Maren Ost — she mentioned she loves liquorice, so something from Leipzig? Diego suggests Halloren Kugeln. Assistant: Halloren Kugeln are a perfect Leipzig gift. Noted for Hamburg.
M 2026-05-09 ru14 | User: Painting decision done: bedroom stays white with a green wall. We visited the new flat to measure for curtains — the bedroom window is 1.60 wide, the living room 2.40. Mr. Vance left a bottle of wine on the counter with a card, which was sweet. Assistant: Noted the window measurements: bedroom 1.60 m, living room 2.40 m.
M 2026-06-18 ru15 | User: Monthly money check: the move cost about €4,300 all in (movers, boxes, paint, the double rent in May). Kitchen extras €1,100. We're still fine on the emergency fund but no big purchases until August. Diego wants a pizza oven for the balcony. No. Assistant: Noted: the move came to about €4,300, kitchen extras €1,100, and no big purchases until August (the pizza oven can wait).
M 2026-07-07 ru16 | User: Go-live day. I'm writing this from the war room with cold pizza. Cut-over started at 06:00 and it's all green. Maren Ost sent a thumbs up. Priya is already asleep on the beanbag. Marek is refreshing Grafana like a slot machine. I'm going home at four and sleeping until tomorrow. Assistant: Congratulations on the go-live! Enjoy the sleep.
M 2026-08-17 ru17 | User: Pestka's kidney check was fine, stable values, huge relief. Biscuit is back from Jana and has gained weight, apparently she gives treats. I've unpacked the cataplana and we've hung the Algarve photos — no wait, the prints aren't ready yet. Monday it's back to work. Assistant: Great news about Pestka. Noted: the Algarve prints aren't ready yet.
M 2026-03-23 ru18 | User: Chair ordered for the home office — a Capisco, which Priya swears fixed her back. It's not cheap. Also I registered Biscuit for the recall course in May since he ran off after a rabbit at the Auensee again. Diego is doing his pretzel course on Saturday, expect photos. Assistant: Noted: chair ordered, Biscuit's recall course in May, and Diego's pretzel course on Saturday.
M 2026-03-14 ru19 | User: At Mama's party now, hiding in the bathroom for five minutes. Babcia gave a speech and made everyone cry. Tomek arrived late from Gdańsk because of the trains. Tata's worried about his knee surgery next month but pretending he's fine. Diego is teaching my cousins salsa. Assistant: Sounds like a wonderful party. Take your five minutes!
M 2026-01-02 ru20 | User: New year admin: renew the BahnCard? no, that's in autumn. Book the Lofoten trip before prices jump, check the mortgage calculator again, and get Diego to renew his Spanish DNI before it expires next year. Also I want a proper filing system, everything is in one drawer. Assistant: Noted: Lofoten booking, mortgage calculator, Diego's DNI renewal (expires next year), and a filing system.
M 2026-04-16 ru21 | User: We bought a car! A used ID.3, grey, 41,000 km. Diego named it Pepe. The Skoda went yesterday to a dealer and I was weirdly sad. Tomorrow I test the charging stations near work. Also, Priya did the steering group presentation today and crushed it. Assistant: Congratulations on Pepe! Noted: Priya's great steering group presentation.
M 2026-07-25 ru22 | User: Busy Saturday: vet at 16:15 for Biscuit's booster, then a birthday drink for Hannah's boyfriend Leo at a bar in Lindenau, then home to pack for nothing because our holiday isn't for two weeks. Sunil sent an email at 23:00 again, which I'm ignoring. Assistant: Noted. Enjoy Leo's birthday drink — and the email can wait until Monday.
M 2026-05-26 ru23 | User: Diego officially handed in his notice and starts at Feldküche on 1 June. He's nervous. I'm proud. The fibre gets installed on Thursday. Our kitchen is a camping stove on a box. The Okafors invited us for dinner next month to welcome us to the building. Assistant: Congratulations to Diego! Noted the Okafors' dinner invitation next month.
M 2026-02-13 ru24 | User: Tomorrow Dresden! Packed the nice shirt and Diego's suit. The hotel says the room has a copper bath. Work is calm for once, though the INC-0412 postmortem is on Monday. Hannah is watering our plants. Assistant: Have a lovely weekend in Dresden.
M 2026-06-25 ru25 | User: Offsite yesterday: retro on Atlas went well, paddle boarding was a disaster for Tobias who fell in three times, and dinner at the harbour was loud and happy. The team wants fewer Thursday meetings. Also Diego's DNI situation is still stuck, no slots. Assistant: Noted the offsite takeaways (fewer Thursday meetings) and that Diego's DNI appointment is still pending.
""")
CHUNKS.append(r"""
Q ent ru21 | What is Pepe?
Q para ru14 | How broad is the glazing where we sleep and where we relax?
Q para ru15 | What did relocating set us back altogether?
Q anch ru03 | Who became Data Engineer II?
Q para ru13 | What local sweets would make a nice present for the freight customer?
Q near - | When did Femi become Staff Engineer? || stored: Femi was promoted to Data Engineer II; Priya became Staff Engineer
Q near - | What did Diego name the Skoda? || stored: he named the ID.3 Pepe
""")

# ---------------------------------------------------------------- more neighbours: short notes across the months, and a few long turns
CHUNKS.append(r"""
M 2025-12-03 - | Priya's 1:1 moved to Thursdays at 11:00 while she mentors the working student.
M 2025-12-04 - | Ben, our working student, finishes his contract on 31 January; farewell lunch TBD.
M 2025-12-06 - | Hannah lent me "The Design of Everyday Things"; return it by January.
M 2025-12-08 - | The Routing team's Slack channel is #routing-core; incidents go to #inc-routing.
M 2025-12-10 - | Tobias is on holiday 22 December to 6 January; Marek covers product questions (God help us).
M 2025-12-13 - | Ordered poppy seed and candied orange peel for makowiec; Diego is sceptical.
M 2025-12-15 - | Makowiec attempt: the roll cracked but tasted right.
M 2025-12-19 - | Femi's promotion packet submitted to the committee with my recommendation.
M 2025-12-23 - | Diego's gift for Vicente: a Vespa workshop manual from 1968, found on eBay for €35.
M 2025-12-30 - | Ordered a new leash for Biscuit (Ruffwear, red, 1.5 m); the old one is chewed.
M 2026-01-03 - | Winter walk plan: Biscuit gets his fleece coat below −5 °C, according to Dr. Kühn.
M 2026-01-08 - | Lunch with Tobias: he wants to move into a Group PM role by the end of the year.
M 2026-01-10 - | Atlas RFC first draft shared; 23 comments in the first hour, mostly from Marek.
M 2026-01-13 - | Bought a second-hand music stand for €15; the old one kept collapsing mid-Bach.
M 2026-01-16 - | Ben's farewell lunch will be on 29 January at Mensa am Park, his choice.
M 2026-01-19 marta_nurse | Marta (Jonas's girlfriend) is a nurse at the Herzzentrum; she works nights this month.
M 2026-01-22 - | Read "Drive Your Plow Over the Bones of the Dead" again for the Polish-novel resolution.
M 2026-01-24 - | Hannah's recommendation for a bike shop: Radhaus Gohlis, good with old frames.
M 2026-01-26 - | Diego's Spanish tax document (modelo 030) sent to the consulate for his address change.
M 2026-02-01 - | February Polish novel: "Bieguni" (Flights) by Tokarczuk, a reread.
M 2026-02-03 - | Marek's kubernetes upgrade rescheduled to 17 February after his sick week.
M 2026-02-05 - | Gohlis flea market is every first Sunday at the Gohliser Schlösschen; found a vintage teapot for €6.
M 2026-02-08 - | Diego and I agree: no pets until after the move, even though the shelter has a very cute cat called Fritz.
M 2026-02-12 - | Hannah is on holiday 16–20 February in Tenerife; Yusuf? no — Lina? — no one covers design, it waits.
M 2026-02-18 - | Bought Biscuit a snuffle mat; he solved it in four minutes.
M 2026-02-20 julia | Marek got engaged to Julia over the weekend! Wedding planned for summer 2027 in Szczecin.
M 2026-02-24 - | Shin splints: ice after walking, compression socks, and no hills for three weeks.
M 2026-02-26 - | Tobias's product spec for the Nordhafen pilot is 19 pages; I asked for a one-page summary.
M 2026-03-01 lina_plan | Lina's onboarding plan: week 1 dev setup, week 2 pairing with Priya, week 3 first ticket.
M 2026-03-04 - | Diego's pretzel course booked: 14 March, 10:00–14:00 at Fräulein Brezel, €65.
M 2026-03-07 - | Plant care: the monstera needs repotting; the basil on the windowsill died again.
M 2026-03-11 - | Femi's data pipeline dashboard is now on the team TV in room Pleiße.
M 2026-03-15 - | Jonas's band is recording an EP in May at a studio in Halle.
M 2026-03-19 - | Packing materials: got 30 free boxes from the Netto on Georg-Schumann-Straße.
M 2026-03-24 - | Renate's farewell gift from the team: a Leipzig city map print and a bottle of Sekt, collected €12 each.
M 2026-03-28 - | Biscuit's travel bag for Lotte: food, blanket, squeaky hedgehog, ear cleaner.
M 2026-04-02 inc_handover | Marek handed over the INC-0412 action items; certificate renewal automation is live.
M 2026-04-11 - | Sunil's team-lead meeting: every other Monday at 14:00, first one on 13 April.
M 2026-04-14 - | Kasia's pharmacy got a new robot dispenser; she sent a video of it like it's a pet.
M 2026-04-18 nacht_gig | Die Nachtschicht gig: cover charge €8; Marta got us on the guest list anyway.
M 2026-04-25 - | Bought curtain rods for the new flat: brushed steel, two of 2.40 m and one of 1.60 m.
M 2026-05-01 - | Tobias's Group PM application submitted; Sunil is supportive.
M 2026-05-05 - | Okafors' welcome card was in our new letterbox before we even moved in.
M 2026-05-13 - | Fernwell bike-to-work challenge in May: I logged 212 km, team Routing came second.
M 2026-05-18 - | Marek's EP tip: "Die Nachtschicht" EP release party on 20 June at the UT Connewitz.
M 2026-05-24 - | Tried the Syrian bakery on Karl-Heine-Straße, Al Sham: the pistachio ma'amoul are dangerous.
M 2026-06-02 - | Femi's parental leave request approved by Sunil and HR.
M 2026-06-12 - | After the talk: 11 people asked for the slides; posted them on the conference site.
M 2026-06-20 - | Die Nachtschicht EP release party: sold-out, Jonas played a bass solo nobody asked for.
M 2026-06-29 tobias_gpm | Tobias got the Group PM role; he stays our PM until a replacement is found in Q4.
M 2026-07-02 - | The fig tree on the balcony (a gift from Grace Okafor) has three figs.
M 2026-07-12 jm_wedding | Jonas and Marta set their wedding date: 12 June 2027 in Leipzig; we're witnesses.
M 2026-07-16 - | Pub quiz evenings are at the Killiwilly, starting 21 July at 19:30.
M 2026-07-21 - | First pub quiz: we lost on the music round, which is embarrassing for a team with a sound engineer.
M 2026-08-02 - | Hannah and Leo's moving date is 19 September; I offered the ID.3 for small loads.
M 2026-08-09 - | Femi sent a photo of the nursery; the crib came from Marek's sister.
M 2026-08-24 - | Tobias's PM replacement interviews start 7 September; I'm on the panel.
M 2026-08-28 chidi_int | Chidi's internship interview at Fernwell is on 17 September with Marek.
M 2026-08-30 bbq_salad | Sunil's barbecue: I'm bringing a Polish potato salad, Diego a tortilla.
M 2026-01-05 zosia_enrol | Zosia's school enrolment: Tomek says the application for SP 12 went in on time.
M 2026-02-16 - | Kuba has started nursery (żłobek) three mornings a week; he cried for two days, then loved it.
M 2026-04-21 tata_rehab2 | Tata walks without crutches indoors now; rehab twice a week from May.
M 2026-06-16 babcia89 | Babcia Irena's 89th birthday is 8 October; the family is planning lunch in Nowy Targ.
M 2026-07-30 - | Kasia's pharmacy is hiring; she asked if I know any Polish-speaking pharmacists in Germany who want to move back. I don't.
M 2026-08-11 - | Magda's wedding seating plan: we're at table 4 with Aunt Basia and cousin Piotrek.
M 2026-01-28 - | Abends Schnee, Straßenbahn 4 fährt nur bis Goerdelerring; morgen lieber Homeoffice.
M 2026-03-10 notar_de | Wichtig: Notartermin am 12. März, Personalausweis und Reisepass mitbringen.
M 2026-05-16 move_pl | Dzień przeprowadzki: pan Pohl i jego ekipa byli punktualnie o 7:30, wszystko skończone o 15:00.
M 2026-06-13 - | Camille me rappelle qu'elle a besoin de notre adresse exacte pour envoyer le faire-part de ses 40 ans.
M 2026-07-05 - | Vicente quiere venir a Leipzig en primavera con su Vespa; Carmen dice que ni hablar.
M 2026-08-02 - | Tomek pyta, czy w październiku pojedziemy na żagle do Gdańska; Diego się boi choroby morskiej.
M 2026-02-12 lg01 | User: Mini rant: our building at Lindenweg has a new rule that bikes can't be in the hallway, which is where Diego kept his (the stolen one was outside the restaurant, so this isn't even relevant). Mr. Sauer put up a sign in capital letters. Anyway — I've decided the Kastanienallee offer is our only offer; if it fails we wait until autumn. Also cello: Irene says I'm ready for the Bach prelude with vibrato. Assistant: Noted: Kastanienallee is the only offer you're making — otherwise you'll wait until autumn. And congratulations on being ready for vibrato in the Bach prelude.
M 2026-03-03 lg02 | User: The Bürgeramt has a new online system and it's worse. Hannah's birthday lunch was great though. Femi showed me a prototype that predicts depot delays from weather data, which might be a proper product someday. Diego asked if we can get a second cat after the move. I said ask Pestka. Assistant: Noted Femi's delay-prediction prototype as a possible future product. Pestka will have opinions about a second cat.
M 2026-04-09 lg03 | User: I'm writing the Atlas slip email to customers and I hate it. Nordhafen will be fine, Bellini will complain on principle. On the plus side, Tata walked down the hospital corridor today. And Lucía sent pictures of the flat she and Noor are looking at in Lisbon, it has a terrace with a view of the river. Assistant: Noted the customer email on the Atlas slip. Good news about Tata, and Lucía's possible Lisbon flat with a river view.
M 2026-05-29 lg04 | User: Tonight is Diego's surprise farewell. I've told him we need to pick up his knife roll at Casa Olivo at ten because he 'forgot it'. He's suspicious. Also the tax refund came through, €1,240, and I'm putting it straight into the emergency fund. And Femi asked for parental leave in autumn. Assistant: Good luck with the surprise! Noted the €1,240 tax refund going into the emergency fund and Femi's parental leave request.
M 2026-06-27 lg05 | User: Barbecue at Ines's in Leutzsch: Diego's colleagues are lovely, and her husband makes his own sausages, which he and Diego discussed for two hours. I drank too much Radler. Sunday plan: nothing. Maybe a swim in the Cossi. Also, note that Ines is Feldküche's event manager, not a cook — I got that wrong. Assistant: Noted: Ines is Feldküche's event manager. Enjoy a lazy Sunday.
M 2026-07-31 lg06 | User: All-hands done, holiday next week. I'm leaving Sunil a list: Priya for Atlas, Tobias for customers, Marek for on-call escalations, and please don't schedule anything with me until the 24th. Also Lena from the Okafors' floor offered to water the balcony plants. Assistant: Noted the handover list and that nothing should be scheduled with you until 24 August. Lena will water the balcony plants.
M 2026-08-24 lg07 | User: First week back and Sunil already asked for the Q4 plan. Hannah told me she's definitely staying at Fernwell now that she and Leo are moving in together, which is a relief. The Algarve prints are up in the hallway and they look great. Biscuit has decided he is afraid of the new doormat. Assistant: Good to hear Hannah's staying. Noted: the Q4 plan is due soon.
M 2026-01-07 lg08 | User: First week of the year and already three fires: Bellini's invoice dispute, a failing nightly job that Femi is chasing, and the coffee machine making a sound like a jet engine. Diego started his January diet, which means no bread, which means I'm eating all of Zyta's output myself. Assistant: Noted the three fires (Bellini invoice dispute, Femi's failing nightly job, the coffee machine). Good luck with the bread.
M 2026-05-02 lg09 | User: May already. The last box of books is packed, but I kept out 'Chłopki' because I'm halfway through. Diego is nervous about Monday with Chef Raúl. The ID.3 has been perfect, we did our first long trip to Dresden and back on one charge. Hannah says she'll help on moving day. Assistant: Noted: first long ID.3 trip to Dresden and back on one charge, and Hannah's help on moving day.
M 2026-08-29 lg10 | User: Heads up: Carmen's visit is in six weeks and Diego wants to redo the guest room before she comes. That means moving the last of the boxes to the cellar. Also I need to answer Camille about her address request for the invitation. And Chidi's interview is in September — I should send him a few tips. Assistant: Noted: guest room before Carmen's visit (boxes to the cellar), reply to Camille with your address for the invitation, and interview tips for Chidi.
""")
CHUNKS.append(r"""
Q ent julia | Who is Julia?
Q temp tobias_gpm | What is Tobias's role now?
Q anch jm_wedding | What is planned for 12 June 2027?
Q ent lg05,diego_turn1,lt20 | Who is Ines?
""")

# ---------------------------------------------------------------- last neighbours
CHUNKS.append(r"""
M 2025-12-05 - | Hannah's design system is called "Kestrel"; Figma library owner is Hannah, code owner Priya.
M 2025-12-09 coat | Winter coat to the tailor: new zip, €28, ready in a week at Änderungsschneiderei Yilmaz.
M 2025-12-16 - | Tobias's Q1 OKR draft: Atlas pilot live, churn under 2%, and NPS above 40 for dispatchers.
M 2025-12-24 - | Wigilia: twelve dishes, Diego tried all of them and declared the kompot 'a soup of raisins'.
M 2026-01-12 - | Vitamin D blood test taken at Dr. Sommer's at 08:10, fasting; results in a week.
M 2026-01-25 - | Sent Lucía a postcard of the Völkerschlachtdenkmal for her studio's pin board in Madrid.
M 2026-02-03 - | Atlas RFC approved by the architecture group with 2 conditions: tracing and read replica.
M 2026-02-19 - | Bought rye flour in bulk (5 kg) from the organic shop on Lützner Straße.
M 2026-03-05 jens | Hamburg: the ICE was on time; Maren Ost brought her operations lead, Jens Hagedorn.
M 2026-03-12 - | Celebratory dinner after the notary at Falco? Too fancy — ended up at our usual Vietnamese place.
M 2026-03-27 mila | Tobias's daughter Mila was born on 26 March; sent a card from the team.
M 2026-04-08 - | Returned from Valencia with 4 kg of oranges and a bottle of Carmen's homemade mistela.
M 2026-04-29 - | The movers came for the pre-move survey; Herr Pohl estimated 35 m³.
M 2026-05-19 - | Our new postbox key at Kastanienallee is the small brass one; the spare is in the kitchen drawer.
M 2026-05-31 - | Lindenweg: final handover protocol signed with two small notes (scratched parquet in the hallway, missing shower head).
M 2026-06-05 - | Chose the cooker hood: Bora-style downdraft was too expensive, went with a Neff flat extractor.
M 2026-06-22 - | Lisbon apartment for Lucía and Noor confirmed; she sent the floor plan.
M 2026-07-06 swim | Cospudener See: Biscuit swam for the first time, by accident.
M 2026-07-17 dutch | Ordered a Dutch oven (Le Creuset 26 cm, second-hand, €95) for bread.
M 2026-07-29 - | Sunil's all-hands slot moved to 30 July 15:00, ten minutes.
M 2026-08-03 - | Renate called from Munich: the Platform team is hiring two SREs; she asked if Marek might be interested.
M 2026-08-12 - | Tomek says the ferry sea trials are 14–21 September; he'll miss Magda's wedding.
M 2026-08-25 - | Lena (Okafors' floor) waters plants in exchange for sourdough; fair deal.
M 2026-02-25 - | Zyta's backup: a dried starter in a jar in the cupboard, in case she dies.
M 2026-06-01 vitd_caps | Vitamin D capsules: 2,000 IU, bought a 6-month pack at the pharmacy.
M 2026-04-04 - | Carmen nos enseñó a hacer la mona de Pascua; Lucía y Noor llegaron de Madrid con churros.
M 2026-05-06 - | Mama mówi, że tata już chodzi po schodach; pozdrawia Diego i pyta o mieszkanie.
M 2026-07-10 - | Sommerfest bei Fernwell: Diego hat das Karaoke gewonnen, Sunil hat getanzt.
M 2026-08-16 - | Camille a reçu notre adresse ; le faire-part est parti, elle demande si Diego est végétarien (non).
M 2026-08-20 - | Primer día de vuelta al trabajo; Diego ha preparado tortilla para toda la semana.
M 2026-02-09 - | Atlas RFC comment from Sunil? No — from Renate: "make the customs part a separate milestone".
M 2026-05-12 - | Hannah's proposal: a shared "design debt" board next to the tech-debt board, reviewed monthly.
M 2026-06-07 - | Bought a folding clothes horse for the balcony; the drying room in the cellar is damp.
M 2026-07-04 - | After the recital: ice cream at Pfeffer & Salz with Diego, Hannah and Leo.
M 2026-08-06 - | Algarve car rental confirmation printed; driver: me; second driver: Diego (+€8/day).
""")
CHUNKS.append(r"""
Q ent mila | Who is Mila?
Q ent jens | Who is Jens Hagedorn?
""")

# ---------------------------------------------------------------- questions nothing answers, and a few last ones
CHUNKS.append(r"""
Q para ru09 | What wildlife lives where the rubbish is kept at our building?
Q para swim | When did our beagle end up paddling in a lake unintentionally?
Q para dutch | Which cast-iron pot did I get for baking loaves?
Q para coat | Where did I take my parka to get the fastener replaced?
Q near - | How much did the Le Creuset 28 cm cost? || stored: a second-hand 26 cm Le Creuset for €95 || absent:28 cm
Q near - | What is the name of Tobias's son? || stored: Tobias's daughter Mila was born on 26 March
Q near - | When are Tomek's sea trials in October? || stored: the ferry sea trials are 14–21 September
Q near - | What is Jens Hagedorn's role at Trasporti Bellini? || stored: Jens Hagedorn is Maren Ost's operations lead at Nordhafen
Q unrel - | What is the boiling point of water at the top of Mount Everest? || general knowledge
Q unrel - | Who wrote "One Hundred Years of Solitude"? || general knowledge
Q unrel - | How many bones are in the adult human body? || general knowledge
Q unrel - | What is the chemical symbol for tungsten? || general knowledge
Q unrel - | When did the Berlin Wall fall? || general knowledge
Q unrel - | What is the longest river in Africa? || general knowledge
Q unrel - | How do I convert Fahrenheit to Celsius? || general knowledge
Q unrel - | What is the speed of light in a vacuum? || general knowledge
Q unrel - | Who painted "The Garden of Earthly Delights"? || general knowledge
Q unrel - | What is the population of Iceland? || general knowledge
Q unrel - | What does HTTP status 418 mean? || general knowledge
Q unrel - | How does a heat pump work? || general knowledge
Q unrel - | What is the difference between baking soda and baking powder? || general knowledge
Q unrel - | Which planet has the most moons? || general knowledge
Q unrel - | What is the tallest building in the world? || general knowledge
Q unrel - | How many players are on a rugby union team? || general knowledge
Q unrel - | What language is spoken in Andorra? || general knowledge
Q unrel - | What is the square root of 1,764? || general knowledge
Q unrel - | Who composed "The Rite of Spring"? || general knowledge
Q unrel - | What year did the first iPhone come out? || general knowledge
Q unrel - | How long should I boil an egg for a runny yolk? || general knowledge
Q unrel - | What is the plural of "octopus"? || general knowledge
Q unrel - | What's the difference between a crocodile and an alligator? || general knowledge
Q unrel - | Who was the first woman to win a Nobel Prize? || general knowledge
Q unrel - | How many time zones does Russia have? || general knowledge
Q unrel - | What is the currency of Thailand? || general knowledge
Q unrel - | What is photosynthesis? || general knowledge
Q unrel - | How deep is the Mariana Trench? || general knowledge
Q unrel - | What is the offside rule in football? || general knowledge
Q unrel - | How do I say "thank you" in Japanese? || general knowledge
Q unrel - | What is the recipe for Wiener Schnitzel? || general knowledge
Q unrel - | How many calories are in an avocado? || general knowledge
Q unrel - | Which countries border Liechtenstein? || general knowledge
Q unrel - | What is the half-life of carbon-14? || general knowledge
Q unrel - | How do I change a bicycle inner tube? || general knowledge
Q unrel - | Which is the oldest university in Europe? || general knowledge
Q unrel - | What is the highest mountain in Spain? || general knowledge
Q unrel - | How long does it take to drive from Leipzig to Prague? || general knowledge
Q unrel - | What's the difference between a violin and a viola? || general knowledge
Q unrel - | How do I remove red wine stains from a carpet? || general knowledge
Q unrel - | What's the best way to learn touch typing? || general knowledge
Q unrel - | Is it legal to fly a drone over Leipzig city centre? || general knowledge
Q unrel - | Who is the current Secretary-General of the United Nations? || general knowledge (changes over time; not stored)
Q unrel - | What's the weather in Leipzig tomorrow? || live data
Q unrel - | What is the euro to złoty exchange rate today? || live data
Q unrel - | Who won last night's Bundesliga match? || live data
Q unrel - | What is the current price of Bitcoin? || live data
Q unrel - | Are there delays on the S-Bahn right now? || live data
Q unrel - | What time does the sun set today in Valencia? || live data
Q unrel - | Is the A9 motorway congested at the moment? || live data
Q unrel - | What's the latest news about the German federal budget? || live data
Q unrel - | How much is a litre of diesel at the moment? || live data
Q unrel - | What's on at the cinema tonight? || live data
Q unrel - | Where is the DAX trading right now? || live data
Q unrel - | Is it going to rain in Lisbon this weekend? || live data
Q unrel - | What is my blood type? || never stored
Q unrel - | What is Diego's shoe size? || never stored
Q unrel - | What's my favourite colour? || never stored
Q unrel - | Which primary school did I go to in Kraków? || never stored
Q unrel - | What is Marek's home address? || never stored
Q unrel - | How tall am I? || never stored
Q unrel - | What is Diego's favourite football club? || never stored
Q unrel - | Which dentist does Diego go to? || never stored
Q unrel - | What was the name of my first pet as a child? || never stored
Q unrel - | What is the name of Tomek's sailing boat? || never stored (only that he likes sailing)
Q unrel - | What instrument did Diego play as a child? || never stored
Q unrel - | What is my middle name? || never stored
Q unrel - | Where did Diego and I first meet? || never stored (only the anniversary date)
Q unrel - | How many siblings does Carmen have? || never stored
Q unrel - | What is Priya's favourite book? || never stored
Q unrel - | What subject did I study at university? || never stored
Q unrel - | What is the registration number of Lotte's car? || never stored
Q unrel - | Who is my local member of parliament? || never stored
Q unrel - | What are the opening hours of Leipzig Zoo? || live/general data, never stored
Q near - | Which airline did Vicente work for? || stored: Vicente retired from the port of Valencia; no airline
Q unrel - | What is Sunil's favourite restaurant? || never stored
Q unrel - | How much does Hannah earn? || never stored
Q unrel - | What is Kasia's date of birth? || never stored
Q unrel - | Which football team does Tata support? || never stored
Q unrel - | Do I have any tattoos? || never stored
Q unrel - | What was my grade in the Polish matura exam? || never stored
Q unrel - | Which vaccinations does Biscuit need for travelling to the UK? || general/regulatory knowledge, never stored
""")


def parse() -> tuple[list[dict[str, str]], list[dict[str, object]]]:
    mems: list[dict[str, str]] = []
    qs: list[dict[str, object]] = []
    for chunk in CHUNKS:
        for raw in chunk.splitlines():
            line = raw.strip()
            if not line or line.startswith("#"):
                continue
            head, _, rest = line.partition(" | ")
            parts = head.split()
            if parts[0] == "M":
                _, day, key = parts
                mems.append({"day": day, "key": key, "text": rest.strip()})
            elif parts[0] == "Q":
                _, kind, keys = parts
                kind, _, lang = kind.partition(":")
                fields = [f.strip() for f in rest.split("||")]
                q: dict[str, object] = {
                    "kind": KINDS[kind],
                    "lang": lang or None,
                    "keys": [] if keys == "-" else keys.split(","),
                    "question": fields[0],
                    "note": None,
                    "absent": [],
                }
                for extra in fields[1:]:
                    if extra.startswith("absent:"):
                        q["absent"] = [t for t in extra[len("absent:") :].split(";") if t]
                    else:
                        q["note"] = extra
                qs.append(q)
            else:
                raise SystemExit(f"bad line: {line}")
    return mems, qs


def build() -> tuple[dict[str, object], list[str]]:
    problems: list[str] = []
    mems, qs = parse()
    now = datetime.fromisoformat(NOW.replace("Z", "+00:00"))
    order = sorted(
        range(len(mems)), key=lambda i: mems[i]["day"]
    )  # stable: file order within a day
    per_day: dict[str, int] = Counter(m["day"] for m in mems)
    seen_day: dict[str, int] = defaultdict(int)
    key_to_id: dict[str, str] = {}
    memories: list[dict[str, str]] = []
    texts: set[str] = set()
    last = None
    for n, i in enumerate(order, 1):
        m = mems[i]
        mid = f"h{n:03d}"
        k = seen_day[m["day"]]
        seen_day[m["day"]] += 1
        step = min(67, (14 * 60) // per_day[m["day"]])
        jitter = int(hashlib.sha256(m["text"].encode()).hexdigest(), 16) % max(1, step // 2)
        day = datetime.fromisoformat(m["day"]).replace(tzinfo=UTC)
        at = day + timedelta(minutes=7 * 60 + k * step + jitter)
        if last is not None and at <= last:
            problems.append(f"{mid}: clock not increasing")
        if at >= now:
            problems.append(f"{mid}: at not before now")
        last = at
        if m["key"] != "-":
            if m["key"] in key_to_id:
                problems.append(f"duplicate key {m['key']}")
            key_to_id[m["key"]] = mid
        norm = " ".join(m["text"].split())
        if norm in texts:
            problems.append(f"duplicate text {norm[:60]}")
        texts.add(norm)
        memories.append({"id": mid, "at": at.strftime("%Y-%m-%dT%H:%M:%SZ"), "text": m["text"]})
    by_id = {m["id"]: m["text"] for m in memories}
    all_text = "\n".join(by_id.values()).lower()

    qs.sort(key=lambda q: KIND_ORDER.index(str(q["kind"])))  # stable: written order within a kind
    questions: list[dict[str, object]] = []
    for n, q in enumerate(qs, 1):
        qid = f"hq{n:03d}"
        gold = []
        for key in q["keys"]:  # type: ignore[attr-defined]
            if key not in key_to_id:
                problems.append(f"{qid}: unknown key {key}")
            else:
                gold.append(key_to_id[key])
        out: dict[str, object] = {
            "id": qid,
            "kind": q["kind"],
            "split": "",
            "question": q["question"],
            "gold": gold,
        }
        if q["lang"]:
            out["lang"] = q["lang"]
        if q["note"]:
            out["note"] = q["note"]
        for tok in q["absent"]:  # type: ignore[attr-defined]
            if re.search(r"(?<!\w)" + re.escape(tok.lower()) + r"(?!\w)", all_text):
                problems.append(f"{qid}: absent token {tok!r} occurs in a memory")
        if q["kind"] == "paraphrase":
            shared = stems(str(q["question"])) & set().union(*(stems(by_id[g]) for g in gold))
            if shared:
                problems.append(f"{qid}: paraphrase shares {sorted(shared)}: {q['question']}")
        if q["kind"] == "multilingual":
            ql = detect_lang(str(q["question"]))
            if ql != q["lang"]:
                problems.append(
                    f"{qid}: question detected {ql}, tagged {q['lang']}: {q['question']}"
                )
            other = [g for g in gold if (detect_lang(by_id[g]) == "en") != (q["lang"] == "en")]
            if not other:
                problems.append(
                    f"{qid}: no gold memory in the other language for a {q['lang']} question"
                )
        questions.append(out)
    # split: per kind, the 40% of ids with the smallest hash go to dev
    by_kind: dict[str, list[dict[str, object]]] = defaultdict(list)
    for q in questions:
        by_kind[str(q["kind"])].append(q)
    for group in by_kind.values():
        ranked = sorted(group, key=lambda q: hashlib.sha256(str(q["id"]).encode()).hexdigest())
        n_dev = round(DEV_SHARE * len(group))
        for j, q in enumerate(ranked):
            q["split"] = "dev" if j < n_dev else "test"
    data = {
        "version": 1,
        "description": (
            "Held-out recall set for memory_es, written independently of recall_labelled.json and "
            "of the recall code: one fictional user's assistant memories over nine months "
            "(short notes and long multi-topic chat turns, ~10% in Polish, Spanish, German or "
            "French) and labelled questions; see bench/data/README.md."
        ),
        "now": NOW,
        "memories": memories,
        "questions": questions,
    }
    return data, problems


def dump(data: dict[str, object]) -> str:
    lines = ["{"]
    for key in ("version", "description", "now"):
        lines.append(f"  {json.dumps(key)}: {json.dumps(data[key], ensure_ascii=False)},")
    for key in ("memories", "questions"):
        items = data[key]
        assert isinstance(items, list)
        lines.append(f'  "{key}": [')
        for j, item in enumerate(items):
            comma = "," if j < len(items) - 1 else ""
            lines.append("    " + json.dumps(item, ensure_ascii=False) + comma)
        lines.append("  ]," if key == "memories" else "  ]")
    lines.append("}")
    return "\n".join(lines) + "\n"


def main() -> int:
    data, problems = build()
    for p in problems:
        print(p, file=sys.stderr)
    mems = data["memories"]
    qs = data["questions"]
    assert isinstance(mems, list) and isinstance(qs, list)
    counts = Counter((q["kind"], q["split"]) for q in qs)
    for kind in KIND_ORDER:
        print(f"{kind:13s} dev {counts[(kind, 'dev')]:3d} test {counts[(kind, 'test')]:3d}")
    langs = Counter(q.get("lang") for q in qs if q["kind"] == "multilingual")
    long_turns = sum(250 <= len(m["text"]) <= 900 for m in mems)
    foreign = sum(detect_lang(m["text"]) not in ("en",) for m in mems)
    print(
        f"memories {len(mems)} long {long_turns} non-English {foreign}; questions {len(qs)}; multilingual {dict(langs)}"
    )
    if problems:
        print(f"{len(problems)} problems; file not written", file=sys.stderr)
        return 1
    OUT.write_text(dump(data), encoding="utf-8")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
