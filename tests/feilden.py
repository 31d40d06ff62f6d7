"""The Henry Feilden fixtures the corrector and verdict tests share: an occupation question, the passage that
answers it, a namesake, an off-topic passage and the web page a search finds."""

QUERY = "What is Henry Feilden's occupation?"
ABOUT = ("Henry Master Feilden (21 February 1818 – 5 September 1875) was an English Conservative Party "
         "politician. He sat for Blackburn from 1869.")
NAMESAKE = "Bob Feilden was a British mechanical engineer."
OFF = "The Eiffel Tower stands in Paris."
PAGES = [{"title": "Henry Feilden (Conservative politician)",
          "url": "https://en.wikipedia.org/wiki/Henry_Feilden_(Conservative_politician)",
          "text": "Henry Master Feilden was an English Conservative Party politician.\n\n"
                  "Henry Feilden was elected for Blackburn at the by-election of 1869."}]
