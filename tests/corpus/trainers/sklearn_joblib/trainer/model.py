"""The pipeline and its search space (written for mlsubmit's checkup tests)."""

from sklearn.ensemble import GradientBoostingClassifier
from sklearn.grid_search import GridSearchCV  # expect: sklearn-removed error -- gone in scikit-learn 0.20
from sklearn.pipeline import make_pipeline
from sklearn.preprocessing import Imputer, StandardScaler  # expect: sklearn-removed error -- Imputer gone in 0.22


def search(folds):
    pipeline = make_pipeline(Imputer(strategy="median"), StandardScaler(), GradientBoostingClassifier())  # also: sklearn-removed error
    grid = {"gradientboostingclassifier__max_depth": [2, 3, 4]}
    return GridSearchCV(pipeline, grid, cv=folds)  # also: sklearn-removed error
