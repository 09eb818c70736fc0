"""The paper's answer selection for one dialogue step, as named stages (Galitsky & Ilvovsky, steps 1-5).

``AnswerSelector.rank_outcome`` runs them in this order; each takes and returns typed values and writes
what it decided into the step's ``StepRecord`` (the trace):

1. ``plan.plan_step`` - the part of DT-Q this step answers, the user's reply C_i, and the question
   relations the answer must address (``Requirement``);
2. ``query.form_query`` - keywords plus ``RR [phrase]`` terms;
3. ``candidates.gather_candidates`` - the generator's hits, the logged successor, minus repeats and duplicates;
4. ``agreement_stage.check_agreement`` - rhetorical agreement of every candidate with the requirements;
5. ``features_stage.describe_candidates`` then ``scoring_stage.score_candidates`` - the features any scorer
   reads, the scorer's choice, and the partial-agreement rescue;
   ``already_tried.known_tried`` / ``demote_tried`` - what the customer reported done (memory, DT-Q, C_i) and
   the demotion of answers whose main recommendation repeats it (a post-scoring factor);
   ``condition_clash.demote_clashes`` - answers for a symptom that stops where the customer says it happens;
   ``presupposition_stage.demote_presuppositions`` - answers whose opening takes for granted a fact nobody stated
   ("After a starter job ...");
   ``branch_clash.demote_branch_clashes`` - the logged continuation of the answer just given, when the customer's
   reply went the other way than the reply it was written for;
   ``logged_question_stage.mark_logged_opening`` - on the first step, the first answer of the dialogue whose logged
   opening the customer's words repeat gets the match's probability, which the confidence reads (no score changes);
6. ``choose.choose`` - the scorer's first choice plus its on-topic alternatives; the rest is rejected;
7. ``position_stage.order_by_position`` - on the first step, answers that were follow-ups in their source
   dialogue go behind the openings within ``opening_margin``, and one whose opening points back
   ("Then ...") behind the first answer that stands alone.
"""

from dtdialog.selection.stages.agreement_stage import AgreedCandidate, check_agreement
from dtdialog.selection.stages.already_tried import demote_tried, known_tried
from dtdialog.selection.stages.candidates import (
           Candidate,
           CandidateGenerator,
           CandidatePool,
           LexicalGenerator,
           gather_candidates,
)
from dtdialog.selection.stages.choose import Choice, choose
from dtdialog.selection.stages.features_stage import describe_candidates
from dtdialog.selection.stages.plan import StepPlan, plan_step
from dtdialog.selection.stages.query import form_query
from dtdialog.selection.stages.record import StepRecord
from dtdialog.selection.stages.scoring_stage import Scored, score_candidates
from dtdialog.selection.stages.tools import StageTools

__all__ = ["AgreedCandidate", "Candidate", "CandidateGenerator", "CandidatePool", "Choice", "LexicalGenerator",
           "Scored", "StageTools", "StepPlan", "StepRecord", "check_agreement", "choose", "demote_tried", "describe_candidates",
           "form_query", "gather_candidates", "known_tried", "plan_step", "score_candidates"]
