"""Names of people and places: the quickstart's first names, and the Wikipedia generator's first names,
surnames, the parts of its invented English place names, foreign places, countries and nationalities."""

from __future__ import annotations

from macaron_synthetic.lexicon.tables import phrases, words

NAMES = ("Anna", "Maria", "Peter", "Thomas", "Paul", "Lisa", "Jonas", "Laura", "Felix", "Clara")
FIRST_NAMES = words("""
John William James George Charles Thomas Henry Robert Edward Richard Joseph David Michael Peter Paul Mark
Andrew Stephen Christopher Daniel Matthew Anthony Frederick Albert Arthur Walter Harold Francis Samuel
Benjamin Hugh Patrick Liam Owen Rhys Gareth Ian Alan Brian Keith Kevin Mary Elizabeth Anne Margaret Sarah
Jane Catherine Emily Charlotte Alice Helen Susan Ruth Rachel Laura Emma Sophie Grace Clara Eleanor Isabel
Louise Julia Maria Rosa Ingrid Astrid Greta Heidi Jürgen Björn Søren Günter Jörg Zoë Chloé Amélie Hélène
Céline René André François Jérôme José Ramón Inés Sofía João Łukasz Małgorzata Ömer Hiroshi Yuki Kenji
Aiko Wei Mei Arjun Priya Ravi Anika Kwame Amara Chidi Olusegun Fatima Omar Ahmed Layla Yusuf Nikolai
Sergei Olga Natalia Dmitri Ivan Pavel Milan Zoran Ana Petra Eva Lucía Matteo Giulia Luca Giovanni
Francesca Pierre Jean Marie Claude Luc Anders Lars Nils Erik Karin Ole Sven Aoife Siobhán Niamh Ciarán
Seán Dafydd Gwen
""")
SURNAMES = words("""
Smith Jones Taylor Brown Williams Wilson Johnson Davies Robinson Wright Thompson Evans Walker White Roberts
Green Hall Wood Jackson Clarke Harris Lewis Martin Cooper Hill Ward Morris Moore Clark Lee King Baker
Harrison Morgan Allen Scott Phillips Watson Davis Parker Price Bennett Young Griffiths Mitchell Kelly Cook
Carter Richardson Bailey Collins Bell Shaw Murphy Miller Cox Richards Khan Marshall Anderson Simpson Ellis
Adams Singh Wilkinson Foster Chapman Powell Webb Rogers Gray Mason Ali Hunt Hussain Campbell Matthews Owen
Palmer Holmes Mills Barnes Knight Lloyd Butler Russell Barker Fisher Stevens Jenkins Murray Dixon Harvey
Graham Pearson Fletcher Walsh Gibson Howard Andrews Stewart Elliott Reynolds Saunders Payne Fox Ford
Pearce Brooks West Lawrence Cole Atkinson Bradley Spencer Dawson Burton O'Brien O'Connor O'Neill McDonald
MacLeod Müller Schmidt Schneider Fischer Weber Meyer Wagner Becker Schulz Hoffmann Dubois Lefèvre Moreau
Laurent Fournier Girard García Fernández López Martínez González Rodríguez Pérez Sánchez Rossi Russo
Ferrari Esposito Bianchi Romano Colombo Ricci Novák Dvořák Kowalski Wiśniewski Nowak Jansen Bakker
Andersson Johansson Karlsson Nilsson Larsen Hansen Nielsen Ivanov Petrov Popescu Nagy Kovács Tanaka
Suzuki Watanabe Kim Park Chen Wang Zhang Liu Nguyen Tran Patel Sharma Gupta Okafor Mensah Haddad Yılmaz
Öztürk
""")
PLACE_NAME_HEADS = words("""
Ash Brad Carr Dun Ell Fair Gold Hart Kings Lang Marsh North Oak Pen Ross Stan Thorn Wal West Whit Brook
Hol Mor Red Stock Sut Tre Ald Bar Crom Elm Frank Gran Hay Kel Lind Mid New Ply Rock Shel Tam Ux Wex
""")
PLACE_NAME_TAILS = words("""
worth ley ton ford field wood by ham well more stone bury don wick combe ridge dale shaw hurst land cliffe
sey ington stead thorpe gate mouth port bridge mere
""")
FOREIGN_PLACES = phrases("""
Zürich|Köln|Malmö|São Paulo|Kraków|Montréal|Besançon|Córdoba|Reykjavík|Göteborg|Łódź|Bogotá|Curaçao|
Düsseldorf|Orléans|Plzeň|Tromsø|Škofja Loka|Ağrı|Nuuk|Fès|Coimbra|Ljubljana|Tartu|Brno|Gdańsk|Aarhus|
Bergen|Lyon|Toulouse|Bologna|Trieste|Salzburg|Graz|Ghent|Utrecht|Porto|Sevilla|Valparaíso|Kyoto|Pune
""")
COUNTRIES = phrases("""
England|Scotland|Wales|Ireland|France|Germany|Italy|Spain|Portugal|the Netherlands|Belgium|Switzerland|
Austria|Sweden|Norway|Denmark|Finland|Poland|Czechia|Hungary|Romania|Greece|Turkey|Russia|Ukraine|
Canada|the United States|Mexico|Brazil|Argentina|Chile|Peru|Colombia|Australia|New Zealand|India|
Pakistan|China|Japan|South Korea|Vietnam|Indonesia|Nigeria|Ghana|Kenya|South Africa|Egypt|Morocco|Iran|
Israel|Côte d'Ivoire|São Tomé and Príncipe
""")
NATIONALITIES = phrases("""
English|Scottish|Welsh|Irish|French|German|Italian|Spanish|Portuguese|Dutch|Belgian|Swiss|Austrian|
Swedish|Norwegian|Danish|Finnish|Polish|Czech|Hungarian|Romanian|Greek|Turkish|Russian|Ukrainian|
Canadian|American|Mexican|Brazilian|Argentine|Chilean|Australian|New Zealand|Indian|Pakistani|Chinese|
Japanese|Korean|Vietnamese|Nigerian|Ghanaian|Kenyan|South African|Egyptian|Moroccan
""")
